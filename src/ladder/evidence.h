// kc — reading ladder evidence records back (ladder.jsonl), shared by
// `kc status` and `kc merge`.
#pragma once

#include <yaml-cpp/yaml.h>

#include "kc/ladder.h"

namespace kc::ladder {

/// A rung record's body read back; throws YAML::Exception on a malformed one.
RungResult rung_from_node(const YAML::Node& n);

}  // namespace kc::ladder
