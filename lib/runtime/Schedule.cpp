//===- Schedule.cpp - learning-rate schedules -----------------------------===//

#include "lib/runtime/Schedule.h"

#include <cmath>

namespace tlm::runtime {

double Schedule::at(int64_t t) const {
  if (kind == Kind::Constant)
    return maxLr;
  if (t < warmup)
    return double(t) / double(warmup) * maxLr;
  if (t > decayEnd)
    return minLr;
  // warmup <= t <= decayEnd; a decay of no steps is at its end already.
  if (decayEnd == warmup)
    return maxLr;
  double progress = double(t - warmup) / double(decayEnd - warmup);
  if (kind == Kind::Linear)
    return maxLr - progress * (maxLr - minLr);
  return minLr + (1 + std::cos(M_PI * progress)) / 2 * (maxLr - minLr);
}

Expected<Schedule::Kind> Schedule::kindNamed(const std::string &name) {
  if (name == "cosine")
    return Kind::Cosine;
  if (name == "constant")
    return Kind::Constant;
  if (name == "linear")
    return Kind::Linear;
  return makeError("the schedule must be cosine, constant or linear, found '" +
                   name + "'");
}

} // namespace tlm::runtime
