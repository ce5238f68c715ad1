//===- RunDir.h - a training run's folder (--out-dir) -----------*- C++ -*-===//
//
//   run.json        the config and the flags the run started with
//   step-NNNNNNNN/  checkpoints (lib/runtime/Checkpoint.h), the last
//                   --keep of them
//   latest          the newest checkpoint's folder name
//   metrics.jsonl   one JSON object a step, and one an evaluation
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_TLMRUN_RUNDIR_H
#define TLM_TOOLS_TLMRUN_RUNDIR_H

#include "lib/runtime/Checkpoint.h"
#include "lib/support/Error.h"
#include "lib/support/Json.h"

#include <cstdio>
#include <string>

namespace tlm::cli {

class RunDir {
public:
  /// A new run in `dir` (created if missing; its parent must exist): an
  /// error when it holds another run's run.json. Writes run.json.
  static Expected<RunDir> start(const std::string &dir,
                                const json::Value &runInfo);
  /// The run in `dir` to continue: its run.json must hold `config` (the
  /// same model) and `args` (the same flags, but for the steps); metrics
  /// past `step` (an interrupted run's) are dropped once the checkpoint is
  /// known.
  static Expected<RunDir> resume(const std::string &dir,
                                 const json::Value &config,
                                 const json::Value &args);
  RunDir(RunDir &&other) noexcept;
  ~RunDir();

  /// The newest checkpoint's folder, or an error when there is none.
  Expected<std::string> latest() const;
  /// Writes checkpoint `step`, points `latest` at it, and removes all but
  /// the newest `keep`.
  Expected<std::string> save(const runtime::Trainer &trainer,
                             const runtime::CheckpointState &state,
                             int64_t keep);
  /// Keeps the metrics lines of steps up to `step`, and appends after them.
  Error keepMetricsUpTo(int64_t step);
  /// One line of metrics.jsonl.
  Error log(const json::Value &line);

  const std::string &path() const { return dir_; }

private:
  explicit RunDir(std::string dir) : dir_(std::move(dir)) {}
  Error openMetrics();
  std::string dir_;
  std::FILE *metrics_ = nullptr;
};

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_RUNDIR_H
