// kc — the per-family property tables (one file each in this folder), joined
// in registry.cpp's one table. Internal to src/engine.
#pragma once

#include <vector>

#include "kc/obligation.h"

namespace kc::obligation {

void add_softmax_properties(std::vector<Property>& out);  ///< softmax.cpp
void add_train_properties(std::vector<Property>& out);    ///< train.cpp

}  // namespace kc::obligation
