//===- tlm-run.cpp - the tlm JIT driver -----------------------------------===//
//
//   tlm-run <forward|generate|bench|eval|emit|compare> [flags]
//
// Every failure ends in one `error:` line on stderr and the exit code of
// docs/spec/config.md#command-line. The standard MLIR flags (--mlir-timing,
// --mlir-print-ir-after-all, ...) apply to the compile pipeline.
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <malloc.h>
#include <map>
#include <sched.h>
#include <set>
#include <type_traits>

using namespace tlm::cli;

char ExitError::ID = 0;

namespace {
template <typename T>
llvm::Error readNumber(const cl::opt<std::string> &text, T &out) {
  llvm::StringRef arg = llvm::StringRef(text.getValue()).trim();
  bool bad;
  if constexpr (std::is_floating_point_v<T>)
    bad = arg.getAsDouble(out);
  else
    bad = arg.getAsInteger(10, out);
  if (!bad)
    return llvm::Error::success();
  const char *what = std::is_floating_point_v<T> ? "a number"
                     : std::is_unsigned_v<T>     ? "a non-negative integer"
                                                 : "an integer";
  return userError("--" + text.ArgStr + " expects " + what + ", found '" +
                   text.getValue() + "'");
}
} // namespace

llvm::Error Options::resolveNumbers() {
  if (llvm::Error err = readNumber(seedText, seed))
    return err;
  if (llvm::Error err = readNumber(maxNewTokensText, maxNewTokens))
    return err;
  if (llvm::Error err = readNumber(promptLenText, promptLen))
    return err;
  if (llvm::Error err = readNumber(genText, gen))
    return err;
  if (llvm::Error err = readNumber(batchText, batch))
    return err;
  if (llvm::Error err = readNumber(temperatureText, temperature))
    return err;
  if (llvm::Error err = readNumber(topPText, topP))
    return err;
  if (llvm::Error err = readNumber(atolText, atol))
    return err;
  return readNumber(rtolText, rtol);
}

llvm::Error tlm::cli::asUserError(llvm::Error err) {
  if (!err)
    return err;
  std::string message;
  int code = 1;
  llvm::handleAllErrors(
      std::move(err),
      [&](const ExitError &e) { code = e.code, message = e.message; },
      [&](const llvm::ErrorInfoBase &e) { message = e.message(); });
  return llvm::make_error<ExitError>(code, message);
}

namespace {

struct Command {
  llvm::Error (*run)(const Options &);
  std::set<std::string> flags;
  const char *help;
};

const std::map<std::string, Command> &commands() {
  static const std::map<std::string, Command> table = {
      {"forward",
       {runForward,
        {"config", "weights", "tokens", "tokens-file", "output", "target",
         "threads", "seed", "init", "opt-level", "llvm-loops", "lanes",
         "gemv-columns", "weights-load", "huge-pages", "disable"},
        "logits for one sequence or a token file"}},
      {"generate",
       {runGenerate,
        {"config", "weights", "prompt-tokens", "prompt", "tokenizer",
         "max-new-tokens", "temperature", "top-p", "seed", "target", "threads",
         "init", "opt-level", "llvm-loops", "lanes", "gemv-columns",
         "weights-load", "huge-pages", "disable"},
        "generate tokens with a KV cache"}},
      {"bench",
       {runBench,
        {"config", "weights", "prompt-len", "gen", "batch", "threads", "target",
         "json", "seed", "init", "opt-level", "llvm-loops", "lanes",
         "gemv-columns", "weights-load", "huge-pages", "disable"},
        "compile time, prefill and decode speed, peak memory"}},
      {"eval",
       {runEval,
        {"config", "weights", "tokens-file", "json", "threads", "target",
         "seed", "init", "opt-level", "llvm-loops", "lanes", "gemv-columns",
         "weights-load", "huge-pages", "disable"},
        "mean next-token cross-entropy and perplexity of a token file"}},
      {"emit", {runEmit, {"config", "stage"}, "print the IR of a stage"}},
      {"init",
       {runInit,
        {"config", "output", "seed", "init"},
        "write seeded weights: --config C --output W.safetensors"}},
      {"tokenize",
       {runTokenize,
        {"tokenizer", "text", "text-file", "bos"},
        "print the token ids of a text"}},
      {"detokenize",
       {runDetokenize, {"tokenizer", "ids"}, "print the text of token ids"}},
      {"switches",
       {runSwitches, {}, "list the optimizations --disable switches off"}},
      {"import-llama2c",
       {runImportLlama2c,
        {},
        "convert a llama2.c model.bin: MODEL.bin OUTDIR"}},
      {"compare",
       {runCompare,
        {"atol", "rtol"},
        "compare two safetensors tensors: A.st:name B.st:name"}},
  };
  return table;
}

int usage(llvm::raw_ostream &os) {
  os << "usage: tlm-run <command> [flags]   (tlm-run <command> --help)\n"
        "commands:\n";
  for (const auto &[name, cmd] : commands())
    os << "  " << llvm::left_justify(name, 16) << cmd.help << "\n";
  return 1;
}

/// The cores this process may run on (its affinity mask, so a `taskset`
/// or a container's CPU set is honoured).
int defaultThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Each step allocates its temporaries afresh and frees them at the end.
  // With glibc's defaults those of 128 KiB and more (the logits row, the
  // FFN activations) are mmapped and unmapped every time, and page-faulted
  // in again on the next step (~12 µs per 4 KiB page on this VM kind). Keep
  // freed memory in the heap instead: the largest mmap threshold glibc
  // accepts (32 MiB) and no trimming. Measured on small.json, 1 thread, 3
  // alternating runs: decode 42 / 48 / 48 tok/s with the defaults against
  // 69 / 68 / 56 with this policy.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  if (argc < 2)
    return usage(llvm::errs());
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(llvm::outs());
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    llvm::errs() << "error: unknown command '" << name << "'\n";
    return usage(llvm::errs());
  }

  Options options;
  options.startRssMb = currentRssMb();
  options.threads = defaultThreads();
  mlir::registerPassManagerCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  std::vector<const char *> args = {argv[0]};
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg != "--threads" && arg != "-threads" &&
        !arg.starts_with("--threads=") && !arg.starts_with("-threads=")) {
      args.push_back(argv[i]);
      continue;
    }
    llvm::StringRef value;
    if (arg.contains('='))
      value = arg.split('=').second;
    else if (i + 1 < argc)
      value = argv[++i];
    if (value.getAsInteger(10, options.threads)) {
      llvm::errs() << "error: --threads expects an integer, found '" << value
                   << "'\n";
      return 1;
    }
    options.threadsGiven = true;
  }
  // `tlm-run <command> --help` lists that command's flags only, not every
  // option LLVM's and MLIR's libraries register (they still parse).
  for (auto &[flag, opt] : llvm::cl::getRegisteredOptions())
    if (!it->second.flags.count(flag.str()) && flag != "help")
      opt->setHiddenFlag(llvm::cl::ReallyHidden);
  if (auto *threads = llvm::cl::getRegisteredOptions().lookup("threads")) {
    static std::string desc = "worker threads (default: all cores, here " +
                              std::to_string(options.threads) + ")";
    threads->setDescription(desc);
  }
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  std::string overview = "tlm-run " + name + ": " + it->second.help + "\n";
  if (!llvm::cl::ParseCommandLineOptions(args.size(), args.data(), overview,
                                         &errs)) {
    llvm::StringRef msg = llvm::StringRef(parseErrors).trim();
    // llvm::cl prefixes its messages with the program's file name.
    msg.consume_front(argv[0]);
    msg.consume_front(llvm::sys::path::filename(argv[0]));
    msg = msg.ltrim(": ");
    llvm::errs() << "error: " << msg.split('\n').first << "\n";
    return 1;
  }
  // Stray words (an unquoted `--tokens 1 2 3`) must not be dropped silently.
  bool takesArgs = name == "compare" || name == "import-llama2c";
  if (!takesArgs && !options.positional.empty()) {
    llvm::errs() << "error: unexpected argument '" << options.positional[0]
                 << "' (quote lists of ids: --tokens \"1 2 3\")\n";
    return 1;
  }
  // Flags of other subcommands are mistakes, not silently ignored.
  if (options.threadsGiven && !it->second.flags.count("threads")) {
    llvm::errs() << "error: --threads is not an option of '" << name << "'\n";
    return 1;
  }
  for (auto &[flag, opt] : llvm::cl::getRegisteredOptions()) {
    if (opt->getNumOccurrences() == 0 || it->second.flags.count(flag.str()))
      continue;
    if (flag.starts_with("mlir-"))
      continue; // MLIR's own flags apply to the compile pipeline
    llvm::errs() << "error: --" << flag << " is not an option of '" << name
                 << "'\n";
    return 1;
  }

  llvm::Error err = options.resolveNumbers();
  if (!err)
    err = it->second.run(options);
  if (err) {
    int code = 1;
    llvm::handleAllErrors(
        std::move(err),
        [&](const ExitError &e) {
          code = e.code;
          llvm::errs() << "error: " << e.message << "\n";
        },
        [&](const llvm::ErrorInfoBase &e) {
          llvm::errs() << "error: " << e.message() << "\n";
        });
    return code;
  }
  return 0;
}
