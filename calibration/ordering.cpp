// kc — calibration trios for the ordering contract classes.
#include "calibration/calibration_backend.h"

namespace kc::calibration {

void add_ordering_impls(ImplList& out) { (void)out; }

}  // namespace kc::calibration
