// kc — a conformance certificate: what a finished run showed, bound to the
// suite's content, the impls' library versions, the machine profile, the
// grades and the trace's last hash, in one file that is signed
// (kc/sign.h; docs/scale-out.md "Certificates").
#pragma once

#include <string>

#include "kc/status.h"

namespace kc::report {

struct Certificate {
  std::string json;     ///< certificate.json: what is signed, byte for byte
  std::string html;     ///< certificate.html: the same for people
  std::string summary;  ///< one line for the terminal
};

/// The certificate of the run in RUN_DIR (a `kc grade --out` or `kc merge
/// --out` directory): its record, its verified trace, its grades.
Result<Certificate> make_certificate(const std::string& run_dir);

}  // namespace kc::report
