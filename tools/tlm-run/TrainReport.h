//===- TrainReport.h - what tlm-run train says as it goes ------*- C++ -*-===//
//
// One line a step (and one an evaluation) on stderr, unless --quiet or
// --json; with --json one object on stdout at the end.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_TLMRUN_TRAINREPORT_H
#define TLM_TOOLS_TLMRUN_TRAINREPORT_H

#include "tools/tlm-run/Options.h"

#include "lib/runtime/Training.h"
#include "lib/support/Json.h"

#include <string>

namespace tlm::cli {

class Report {
public:
  /// A run of `ranks` processes (under mpirun); its loop starts now.
  explicit Report(const Options &o, int ranks = 1)
      : o(o), ranks(ranks), start(Clock::now()) {}

  /// The loop starts now, at step `from` (0, or a resumed checkpoint's).
  void startAt(int64_t from) {
    first = from;
    start = Clock::now();
  }

  /// Step `s` of `steps`, which took `ms` (the step alone: no batch
  /// drawing, evaluation or checkpoint).
  void step(int64_t s, int64_t steps, const runtime::StepResult &r,
            double lr, double ms, int64_t tokensPerStep);
  /// Time a step spent summing across the ranks (within its step time).
  void summed(double ms) { sumMs += ms; }
  void validation(int64_t s, double loss);
  /// `ms`: the whole loop (steps, batches, evaluations, checkpoints).
  void finish(int64_t steps, double ms, int64_t tokensPerStep);

  /// "42.0 s", "3m05s", "1h02m".
  static std::string duration(double seconds);

private:
  const Options &o;
  int ranks;
  int64_t first = 0;
  Clock::time_point start;
  double stepMs = 0, sumMs = 0;
  json::Value losses = json::Value::array(), norms = json::Value::array(),
              lrs = json::Value::array(), val = json::Value::array();
};

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_TRAINREPORT_H
