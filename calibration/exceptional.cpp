// kc — calibration trios for the exceptional contract classes.
#include "calibration/calibration_backend.h"

namespace kc::calibration {

void add_exceptional_impls(ImplList& out) { (void)out; }

}  // namespace kc::calibration
