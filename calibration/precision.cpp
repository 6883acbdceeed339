// kc — calibration trios for the precision contract classes.
#include "calibration/calibration_backend.h"

namespace kc::calibration {

void add_precision_impls(ImplList& out) { (void)out; }

}  // namespace kc::calibration
