//===- Run.h - what the model commands share --------------------*- C++ -*-===//
#ifndef TLM_TOOLS_TLMRUN_RUN_H
#define TLM_TOOLS_TLMRUN_RUN_H

#include "tools/tlm-run/Options.h"

#include "lib/model/Config.h"
#include "lib/model/Weights.h"
#include "lib/runtime/Session.h"

#include <chrono>
#include <memory>
#include <sys/resource.h>

namespace tlm::cli {

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// The process's peak resident memory so far, MiB.
inline double peakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0; // Linux reports KiB
}

/// Everything a model-running command needs, set up in order.
struct Run {
  model::Config config;
  model::Weights weights;
  std::unique_ptr<runtime::Session> session;
  double compileMs = 0;
};

/// The config, a compiled (or cached, or loaded) session for `batch`
/// sequences, then the weights bound to it.
llvm::Expected<Run> setUp(const Options &o, int64_t batch);

/// An error when `logits` (`count` floats, rows of the vocabulary) hold NaN
/// or Inf: the weights' fault (it names the first weight that is not
/// finite) or an overflow.
llvm::Error checkFinite(const Run &run, const float *logits, int64_t count);

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_RUN_H
