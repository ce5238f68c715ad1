//===- TrainSupport.h - what the training commands share -------*- C++ -*-===//
//
// grad, train and bench --train (TrainCommands.cpp, TrainLoop.cpp) compile
// the step the same way, read the same flags and write parameters alike.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_TLMRUN_TRAINSUPPORT_H
#define TLM_TOOLS_TLMRUN_TRAINSUPPORT_H

#include "tools/tlm-run/Options.h"

#include "lib/compiler/TrainCompile.h"
#include "lib/io/TokenFile.h"
#include "lib/runtime/Training.h"

#include <memory>

namespace tlm::cli {

/// How the step was compiled, for bench --train.
struct CompileInfo {
  double ms = 0;
  int threads = 1;
  /// Peak RSS when the compile was done, MiB.
  double peakMb = 0;
};

/// A trainer holding the step compiled for `config` (f32 weights only; with
/// `optimizer`, train_step, else grad_step) and `shape`, started from
/// --weights or the seeded weights. The memory the run needs is checked
/// first.
Expected<std::unique_ptr<runtime::Trainer>>
makeTrainer(const Options &o, model::Config &config,
            const runtime::OptimizerOptions *optimizer,
            runtime::TrainingShape shape, CompileInfo *info = nullptr);

/// --beta1 .. --decay-vectors, checked.
Expected<runtime::OptimizerOptions> optimizerOptions(const Options &o);

/// Rows `[first, first + count)` of `tokens`, wrapping around.
io::TokenMatrix rows(const io::TokenMatrix &tokens, int64_t first,
                     int64_t count);

/// The parameters as a weights file of the config's names.
Error writeParameters(const std::string &path,
                      const runtime::Trainer &trainer);

/// What grad and train read first: the config and --tokens-file, all of
/// whose rows (ids, lengths) are checked before anything compiles.
struct TrainingInput {
  model::Config config;
  io::TokenMatrix tokens;
  /// The whole file as one batch.
  runtime::TrainingBatch batch;
};
Expected<TrainingInput> readTrainingInput(const Options &o);

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_TRAINSUPPORT_H
