//===- Options.h - tlm-run's command line -----------------------*- C++ -*-===//
#ifndef TLM_TOOLS_TLMRUN_OPTIONS_H
#define TLM_TOOLS_TLMRUN_OPTIONS_H

#include "tools/common/Commands.h"

#include "lib/model/Weights.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Session.h"
#include "lib/compiler/LlvmError.h"

#include "llvm/Support/Error.h"

#include <string>

namespace tlm::cli {

/// The names of the CPU pipeline's switches, or with `cuda` the GPU
/// pipeline's, comma-separated (passes/pipelines/CpuSwitches.def,
/// GpuSwitches.def).
std::string switchNames(bool cuda = false);

/// tlm-run's flags: every row of tools/common/Flags.def, the compiler's
/// among them, and the positional words.
struct Options : Flags {
  /// The model commands' flags (tools/common), which these are.
  const Flags &flags() const { return *this; }
};

/// A mistake in the flags: exit code 1 (docs/spec/config.md#command-line).
/// Where a command says what file it wrote: stdout, unless `output` is
/// stdout itself (`--output /dev/stdout > w.st`), whose bytes the note
/// would corrupt: then stderr.
llvm::raw_ostream &wroteStream(const std::string &output);

inline Error flagError(const llvm::Twine &message) {
  return Error::withExitCode(1, message.str());
}

// Shared by the commands (Commands.cpp).
Expected<model::Config> loadConfig(const Options &o);
/// --threads' default for `command` when it was not given: every core,
/// but for a command that decodes (generate, bench, compile) one thread per
/// mlir::tlm::kStepWorkPerThread multiply-adds of a decode step, with the
/// reason in o.threadsChoice (docs/tlm-run.md#threads).
void chooseThreads(const std::string &command, Options &o);
/// --threads within [1, the documented maximum].
Error checkThreads(const Options &o);
/// The JIT's options from the compile flags (JitFlags.cpp), some of whose
/// `auto` values depend on the model's size.
Expected<runtime::JitOptions> jitOptions(const Options &o,
                                               const model::Config &c);
/// The sessions of the model commands: compiled per the flags (or from the
/// compile cache), or loaded from --artifact; errors carry tlm-run's exit
/// codes.
SessionMaker jitSessions(const Options &o);
Expected<model::Weights> loadWeights(const Options &o,
                                           const model::Config &c);

// The subcommands other than forward, generate, eval and bench
// (tools/common): emit in Commands.cpp, the rest in UtilityCommands.cpp.
Error runEmit(const Options &o);
Error runCompare(const Options &o);
Error runImportLlama2c(const Options &o);
Error runImportHf(const Options &o);
Error runTokenize(const Options &o);
Error runInit(const Options &o);
Error runQuantize(const Options &o);
Error runDetokenize(const Options &o);
/// Lists the switches of --disable, one per line: name, tab, help.
Error runSwitches(const Options &o);
/// Writes an ahead-of-time artifact (a shared library) for --config.
Error runCompile(const Options &o);
/// Writes the loss and every weight's gradient for a token file
/// (TrainCommands.cpp).
Error runGrad(const Options &o);
/// Optimizer steps over a token file's rows (TrainCommands.cpp).
Error runTrain(const Options &o);
Error runTrainTokenizer(const Options &o);
/// bench --train: the speed of the whole training step on seeded weights.
Error runTrainBench(const Options &o);

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_OPTIONS_H
