//===- Schedule.h - learning-rate schedules ---------------------*- C++ -*-===//
//
// The learning rate of each optimizer step, computed on the host (the
// compiled step takes it as a runtime argument). CS336's cosine schedule
// with linear warmup (assignment 1, §4.4), a constant rate, or a linear
// decay; step t counts from 0 as in CS336's get_lr_cosine_schedule.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_SCHEDULE_H
#define TLM_RUNTIME_SCHEDULE_H

#include "lib/support/Error.h"

#include <cstdint>
#include <string>

namespace tlm::runtime {

struct Schedule {
  enum class Kind { Cosine, Constant, Linear };
  Kind kind = Kind::Cosine;
  double maxLr = 1e-3, minLr = 1e-4;
  /// Steps of linear warmup from 0 to maxLr.
  int64_t warmup = 0;
  /// The step at which the decay from maxLr reaches minLr (CS336's
  /// cosine_cycle_iters); minLr after it.
  int64_t decayEnd = 0;

  /// The rate at step t (from 0):
  ///   t < warmup:            t / warmup · maxLr
  ///   warmup <= t <= end:    cosine: minLr + (1 + cos(π (t − warmup) /
  ///                          (end − warmup))) / 2 · (maxLr − minLr);
  ///                          linear: maxLr − (t − warmup) / (end − warmup)
  ///                          · (maxLr − minLr)
  ///   t > end:               minLr
  /// Constant: maxLr at every step.
  double at(int64_t t) const;

  /// "cosine", "constant" or "linear"; anything else is an error naming
  /// the three.
  static Expected<Kind> kindNamed(const std::string &name);
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_SCHEDULE_H
