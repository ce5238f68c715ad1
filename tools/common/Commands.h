//===- Commands.h - forward, generate, eval and bench -----------*- C++ -*-===//
//
// The model-running commands of tlm-run and tlm-exec, on the runtime alone
// (no LLVM): where the session comes from is the tool's SessionMaker (the
// JIT or the compile cache in tlm-run, an artifact in either). Every
// failure is a tlm::Error with its exit code (Error::exitCode()).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_COMMON_COMMANDS_H
#define TLM_TOOLS_COMMON_COMMANDS_H

#include "tools/common/Flags.h"

#include "lib/io/TokenFile.h"
#include "lib/model/Config.h"
#include "lib/model/Weights.h"
#include "lib/runtime/Session.h"
#include "lib/support/Json.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace tlm::cli {

inline Error userError(std::string message) {
  return Error::withExitCode(1, std::move(message));
}

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// Bytes in a MiB: memory figures (RSS, budgets, estimates) are MiB, as
/// the kernel counts RSS; data rates and file sizes are decimal MB and GB.
constexpr double kMiB = 1048576.0;

/// The process's peak resident memory so far, MiB.
double peakRssMb();

/// A session of `batch` sequences for `config`, per the tool's flags.
using SessionMaker = std::function<Expected<std::unique_ptr<runtime::Session>>(
    const Flags &, const model::Config &, int64_t batch)>;

/// The session of --artifact: loaded, checked against the config and
/// against --threads when given.
Expected<std::unique_ptr<runtime::Session>>
artifactSession(const Flags &f, const model::Config &c, int64_t batch);

/// --config, or the config an --artifact records when --config is absent.
Expected<model::Config> loadConfig(const Flags &f);
/// Sets `config`'s dtype from --weights-dtype or the --weights file (they
/// and a config's own non-f32 dtype must agree).
Error resolveDtype(const Flags &f, model::Config &config);
/// --threads within [1, the documented maximum].
Error checkThreads(const Flags &f);
/// --huge-pages as a bool.
Expected<bool> hugePages(const Flags &f);
/// --cuda-graphs as a bool (on needs the GPU: the caller checks).
Expected<bool> cudaGraphs(const Flags &f);
/// --weights, or seeded initialisation (--seed, --init).
Expected<model::Weights> loadWeights(const Flags &f, const model::Config &c);
/// "1 2 3" or "1,2,3" into ids; errors name `flag`.
Expected<std::vector<int64_t>> parseIds(std::string_view flag,
                                        std::string_view text);

/// A (batch, seq) token matrix.
using Tokens = io::TokenMatrix;

/// Rejects ids outside the vocabulary and sequences past the context.
Error checkTokens(const Tokens &t, const model::Config &c);

/// The signal (SIGINT, SIGTERM) that asked generation to stop, or 0.
extern volatile std::sig_atomic_t stopRequested;

/// While alive, SIGINT and SIGTERM set stopRequested (generation ends after
/// the token being printed) instead of killing the process mid-write.
struct StopOnSignal {
  StopOnSignal();
  ~StopOnSignal();
  struct sigaction oldInt, oldTerm;
};

/// Everything a model-running command needs, set up in order.
struct Run {
  model::Config config;
  model::Weights weights;
  std::unique_ptr<runtime::Session> session;
  /// Milliseconds compiling (or loading the code) and reading or
  /// initialising the weights (with their upload to a GPU).
  double compileMs = 0, weightsMs = 0;
  /// Peak RSS when the compile (or the artifact's load) was done, before
  /// the weights: the compiler's high-water mark, MiB.
  double compilePeakMb = 0;
};

/// The bound setUp gives the compiled code's heap once the weights are in:
/// what `limit` leaves, less the command's `logits`, and less the part of
/// the `kvCache` bytes not yet touched (`kvResident` are) unless the limit
/// counts reservations already (an address-space limit). At least 1.
double compiledHeapLimit(const model::MemoryLimit &limit, double kvCache,
                         double kvResident, double logits);

/// The resident-memory budget of docs/memory.md, MiB: 1.2 x weights + KV
/// cache + activations + the process at start + the compiler's high-water
/// mark above the start.
struct MemoryBudget {
  double weights = 0, kvCache = 0, activations = 0, start = 0, compile = 0;
  double bound() const {
    return 1.2 * weights + kvCache + activations + start + compile;
  }
  /// The warning bench prints when `peak` exceeds the bound (by how much,
  /// in MiB and percent), or "" within it.
  std::string warning(double peak) const;
};

/// What a command's largest step computes: `seq` tokens of each of `batch`
/// sequences, with the logits of every position or only of the last.
struct RunShape {
  int64_t batch = 1, seq = 1;
  bool everyPosition = false;
  /// The logits the command holds, bytes.
  double logitBytes(int64_t vocab) const {
    return 4.0 * batch * (everyPosition ? seq : 1) * vocab;
  }
};

/// The config, a session for `shape.batch` sequences, then the weights bound
/// to it. First, before any work, the whole run's memory (weights, KV cache,
/// the command's logits, the compiled code's activations as
/// Session::activationBytes estimates them, and the compiler's) is checked
/// against what the process may take (model::memoryLimit: the machine,
/// ulimit -v / -d, the cgroup). Then the compiled code's heap is bounded by
/// what was available when the weights were in, so a run the estimate
/// missed ends with an error line rather than the kernel's OOM killer.
Expected<Run> setUp(const Flags &f, const RunShape &shape,
                    const SessionMaker &make);

/// An error when `logits` (`count` floats, rows of the vocabulary) hold NaN
/// or Inf: the weights' fault (it names the first weight that is not
/// finite) or an overflow.
Error checkFinite(const Run &run, const float *logits, int64_t count);

Error runForward(const Flags &f, const SessionMaker &make);
Error runGenerate(const Flags &f, const SessionMaker &make);
Error runEval(const Flags &f, const SessionMaker &make);
Error runBench(const Flags &f, const SessionMaker &make);

/// The exit code after the command returned `code`: stdout is flushed, and
/// a write to it that failed (a full disk, `> /dev/full`; `failedErrno` is
/// a failure the caller's own stream saw, else 0) becomes one `error:` line
/// and exit 1 instead of a silent exit 0. A pipe whose reader went away
/// (`| head`) ends quietly with `code`.
int finishStdout(int code, int failedErrno);

/// `message` safe to print as one line: control characters (which a config
/// key or a file name could carry, to forge a line or move the cursor)
/// escaped as \xNN, and at most about 1000 bytes: a long one keeps its
/// start and its end (which names the file). An internal failure
/// (`keepNewlines`) keeps its compiler diagnostics on lines of their own.
std::string printable(std::string_view message, bool keepNewlines);

/// Where a command's human-readable result goes: stdout; with --json, whose
/// one document is all stdout holds, stderr; with --json and --quiet,
/// nowhere (null).
std::FILE *resultStream(const Flags &f);

/// printf to `out` unless it is null (resultStream's "nowhere").
[[gnu::format(printf, 2, 3)]] void printTo(std::FILE *out, const char *format,
                                           ...);

/// --json's document: `doc` as one line on stdout.
void printJsonDocument(const json::Value &doc);

/// Prints `err` as the one `error:` line on stderr and returns its exit
/// code (0 for success).
int report(const Error &err);

} // namespace tlm::cli

#endif // TLM_TOOLS_COMMON_COMMANDS_H
