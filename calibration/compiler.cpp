// kc — calibration trios for the compiler contract classes.
#include "calibration/calibration_backend.h"

namespace kc::calibration {

void add_compiler_impls(ImplList& out) { (void)out; }

}  // namespace kc::calibration
