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

#include "lib/runtime/Allocator.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <unistd.h>

using namespace tlm;
using namespace tlm::cli;

Error Options::resolve() {
  Flags &f = flags_;
  f.config = config, f.weights = weights, f.tokens = tokens;
  f.tokensFile = tokensFile, f.output = output, f.target = target;
  f.init = init, f.promptTokens = promptTokens, f.prompt = prompt;
  f.tokenizer = tokenizer, f.weightsLoad = weightsLoad;
  f.weightsDtype = weightsDtype;
  f.hugePages = hugePages, f.artifact = artifact, f.cacheDir = cacheDir;
  f.cudaGraphs = cudaGraphs;
  f.json = json, f.noCache = noCache;
  f.seedText = seedText, f.maxNewTokensText = maxNewTokensText;
  f.temperatureText = temperatureText, f.topPText = topPText;
  f.topKText = topKText, f.minPText = minPText;
  f.repeatPenaltyText = repeatPenaltyText, f.repeatLastNText = repeatLastNText;
  f.frequencyPenaltyText = frequencyPenaltyText;
  f.presencePenaltyText = presencePenaltyText;
  f.samplingSeedText = samplingSeedText, f.promptFile = promptFile;
  f.promptsFile = promptsFile;
  f.ignoreEos = ignoreEos, f.quiet = quiet, f.interactive = interactive;
  f.special = special, f.echo = echo, f.incremental = incremental;
  f.stops.assign(stops.begin(), stops.end());
  f.stopTokensText = stopTokensText;
  f.promptLenText = promptLenText, f.genText = genText;
  f.batchText = batchText, f.repeatText = repeatText;
  f.contextText = contextText, f.strideText = strideText;
  f.maxTokensText = maxTokensText, f.tokensDtype = tokensDtype;
  f.threads = threads, f.threadsGiven = threadsGiven, f.cores = cores;
  f.startRssMb = startRssMb;
  if (Error err = f.resolveNumbers())
    return err;
  if (Error err = Flags::readDouble("atol", atolText, atol))
    return err;
  return Flags::readDouble("rtol", rtolText, rtol);
}

namespace {

struct Command {
  Error (*run)(const Options &);
  std::set<std::string> flags;
  const char *help;
};

/// forward, generate, eval and bench (tools/common) on tlm-run's sessions.
template <Error (*Run)(const Flags &, const SessionMaker &)>
Error runModelCommand(const Options &o) {
  return Run(o.flags(), jitSessions(o));
}

/// The commands that run MLIR's pass pipeline (unless given --artifact), so
/// MLIR's --mlir-* flags mean something there.
const std::set<std::string> &runsPipeline() {
  static const std::set<std::string> names = {"forward", "generate", "eval",
                                              "bench",   "compile",  "emit"};
  return names;
}

/// The MLIR flags their --help shows (all --mlir-* parse; these are the
/// ones a user of tlm reaches for).
const std::set<std::string> &shownMlirFlags() {
  static const std::set<std::string> names = {
      "mlir-timing", "mlir-print-ir-after-all", "mlir-print-ir-before-all",
      "mlir-print-ir-after-failure", "mlir-pass-statistics"};
  return names;
}

/// Each command's --help ends with these.
const std::map<std::string, const char *> &examples() {
  static const std::map<std::string, const char *> table = {
      {"forward",
       "  tlm-run forward --config examples/tiny.json --tokens \"1 2 3\"\n"
       "  tlm-run forward --config C.json --weights W.safetensors "
       "--tokens-file T.safetensors --output logits.safetensors\n"},
      {"generate",
       "  tlm-run generate --config examples/tiny.json --prompt-tokens \"1 2 "
       "3\" --max-new-tokens 16\n"
       "  tlm-run generate --config C.json --weights W.safetensors "
       "--tokenizer tokenizer.json --prompt \"Once upon a time\" "
       "--temperature 0.8 --top-p 0.9\n"},
      {"eval",
       "  tlm-run eval --config C.json --weights W.safetensors --tokens-file "
       "T.safetensors\n"
       "  tlm-run eval --config C.json --weights W.safetensors --tokens-file "
       "train.bin --tokens-dtype uint16 --context 512 --stride 256\n"},
      {"bench",
       "  tlm-run bench --config examples/small.json --threads 2 --repeat 5 "
       "--json\n"},
      {"emit", "  tlm-run emit --config examples/tiny.json --stage linalg "
               "--mlir-timing\n"},
      {"compile",
       "  tlm-run compile --config examples/small.json --output small.so\n"},
      {"init", "  tlm-run init --config examples/tiny.json --output "
               "W.safetensors --seed 1\n"},
      {"quantize", "  tlm-run quantize --config C.json --weights W.safetensors "
                   "--dtype q8_0 --output W-q8.safetensors\n"},
      {"tokenize", "  tlm-run tokenize --tokenizer tokenizer.json --text "
                   "\"Once upon a time\" --bos\n"},
      {"import-hf", "  tlm-run import-hf ~/models/TinyLlama-1.1B /tmp/tl\n"},
  };
  return table;
}

/// A model command's flags: the run-time ones both tools take, and the
/// compiler's.
std::set<std::string> withCompileFlags(const std::string &command) {
  std::set<std::string> flags = runFlags(command);
  flags.insert({"opt-level", "llvm-loops", "lanes", "gemv-columns", "disable",
                "tensor-cores", "cache-dir", "no-cache"});
  return flags;
}

const std::map<std::string, Command> &commands() {
  static const std::map<std::string, Command> table = {
      {"forward",
       {runModelCommand<runForward>, withCompileFlags("forward"),
        "logits for one sequence or a token file"}},
      {"generate",
       {runModelCommand<runGenerate>, withCompileFlags("generate"),
        "generate tokens with a KV cache"}},
      {"bench",
       {runModelCommand<runBench>, withCompileFlags("bench"),
        "compile time, prefill and decode speed, peak memory"}},
      {"eval",
       {runModelCommand<runEval>, withCompileFlags("eval"),
        "mean next-token cross-entropy and perplexity of a token file"}},
      {"emit",
       {runEmit,
        {"config", "stage", "weights", "weights-dtype"},
        "print the IR of a stage"}},
      {"init",
       {runInit,
        {"config", "output", "seed", "init"},
        "write seeded weights: --config C --output W.safetensors"}},
      {"quantize",
       {runQuantize,
        {"config", "weights", "output", "dtype", "seed", "init"},
        "write weights in another dtype: --config C [--weights W] --dtype "
        "bf16 --output OUT.safetensors"}},
      {"tokenize",
       {runTokenize,
        {"tokenizer", "text", "text-file", "bos", "special", "output",
         "tokens-dtype"},
        "print the token ids of a text"}},
      {"detokenize",
       {runDetokenize, {"tokenizer", "ids"}, "print the text of token ids"}},
      {"compile",
       {runCompile,
        {"config", "output", "target", "threads", "opt-level", "llvm-loops",
         "lanes", "gemv-columns", "disable", "tensor-cores", "cpu",
         "weights-dtype"},
        "write a compiled model: --config C --output model.so"}},
      {"switches",
       {runSwitches,
        {"target"},
        "list the optimizations --disable switches off (--target cuda: the "
        "GPU pipeline's)"}},
      {"import-llama2c",
       {runImportLlama2c,
        {},
        "convert a llama2.c model.bin: MODEL.bin OUTDIR"}},
      {"import-hf",
       {runImportHf,
        {},
        "convert a Hugging Face Llama-family folder: HF_DIR OUTDIR"}},
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

/// Reads the flags of command `name` into `options`: a flag of another
/// command, a stray word or a malformed value is a user error.
Error parseFlags(int argc, char **argv, const std::string &name,
                       const Command &command, Options &options) {
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
    if (value.getAsInteger(10, options.threads))
      return flagError("--threads expects an integer, found '" + value + "'");
    options.threadsGiven = true;
  }
  // `tlm-run <command> --help` lists that command's flags only, not every
  // option LLVM's and MLIR's libraries register (they still parse), and the
  // MLIR flags that observe its pipeline where it runs one.
  bool pipeline = runsPipeline().count(name) > 0;
  for (auto &[flag, opt] : llvm::cl::getRegisteredOptions())
    if (!command.flags.count(flag.str()) && flag != "help" &&
        !(pipeline && shownMlirFlags().count(flag.str())))
      opt->setHiddenFlag(llvm::cl::ReallyHidden);
  // --output means something else in each command that writes a file.
  static const std::map<std::string, std::pair<const char *, const char *>>
      outputHelp = {
          {"forward",
           {"logits.safetensors", "write the F32 'logits' tensor here"}},
          {"init", {"W.safetensors", "write the seeded weights here"}},
          {"quantize",
           {"OUT.safetensors", "write the weights in --dtype here"}},
          {"tokenize",
           {"T", "write the ids here as a token file for eval, instead of "
                 "printing them"}},
          {"compile",
           {"A.so", "write the artifact (a shared library) here"}}};
  if (auto it = outputHelp.find(name); it != outputHelp.end())
    if (auto *output = llvm::cl::getRegisteredOptions().lookup("output")) {
      output->setValueStr(it->second.first);
      output->setDescription(it->second.second);
    }
  if (auto *threads = llvm::cl::getRegisteredOptions().lookup("threads")) {
    static std::string desc = "worker threads (default: all cores, here " +
                              std::to_string(options.threads) + ")";
    threads->setDescription(desc);
  }
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  std::string overview = "tlm-run " + name + ": " + command.help + "\n";
  if (auto it = examples().find(name); it != examples().end())
    overview += "\nEXAMPLES:\n" + std::string(it->second);
  if (!llvm::cl::ParseCommandLineOptions(args.size(), args.data(), overview,
                                         &errs)) {
    llvm::StringRef msg = llvm::StringRef(parseErrors).trim();
    // llvm::cl prefixes its messages with the program's file name.
    msg.consume_front(argv[0]);
    msg.consume_front(llvm::sys::path::filename(argv[0]));
    msg = msg.ltrim(": ");
    return flagError(msg.split('\n').first);
  }
  // Stray words (an unquoted `--tokens 1 2 3`) must not be dropped silently.
  bool takesArgs =
      name == "compare" || name == "import-llama2c" || name == "import-hf";
  if (!takesArgs && !options.positional.empty())
    return flagError("unexpected argument '" + options.positional[0] +
                     "' (quote lists of ids: --tokens \"1 2 3\")");
  // Flags of other subcommands are mistakes, not silently ignored.
  if (options.threadsGiven && !command.flags.count("threads"))
    return flagError("--threads is not an option of '" + name + "'");
  for (auto &[flag, opt] : llvm::cl::getRegisteredOptions()) {
    if (opt->getNumOccurrences() == 0 || command.flags.count(flag.str()))
      continue;
    // MLIR's own flags observe the pass pipeline: where none runs they
    // would be ignored, so they are refused.
    if (flag.starts_with("mlir-") && pipeline && options.artifact.empty())
      continue;
    if (flag.starts_with("mlir-"))
      return flagError(
          "--" + flag + " observes MLIR's pass pipeline, which '" + name +
          (pipeline ? " --artifact' does not run (the artifact is compiled)"
                    : "' does not run (forward, generate, eval, bench, "
                      "compile and emit do)"));
    return flagError("--" + flag + " is not an option of '" + name + "'");
  }
  return options.resolve();
}

} // namespace

/// An allocation that fails anyway (the estimate of setUp is an estimate):
/// one line and exit 1, not LLVM's "out of memory" abort with a stack dump.
/// Only async-signal-safe calls: the heap may be exhausted.
[[noreturn]] static void outOfMemory(void *, const char *, bool) {
  static const char message[] =
      "error: out of memory (the machine's memory, the process's ulimit -v "
      "or -d, or its cgroup's limit ran out; see docs/memory.md)\n";
  ssize_t written = ::write(2, message, sizeof(message) - 1);
  (void)written;
  std::_Exit(1);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::install_bad_alloc_error_handler(outOfMemory);
  llvm::install_out_of_memory_new_handler();
  tlm::runtime::keepFreedMemory();
  // A write past the file-size limit fails with EFBIG and is reported like
  // any write error, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // A closed stdout (`| head`) is a write error the commands see, not a
  // signal that kills the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (argc < 2)
    return usage(llvm::errs());
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(llvm::outs());
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    report(flagError("unknown command '" + name + "'"));
    return usage(llvm::errs());
  }

  Options options;
  options.startRssMb = currentRssMb();
  options.threads = options.cores = availableCores();
  mlir::registerPassManagerCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  if (Error err = parseFlags(argc, argv, name, it->second, options))
    return report(err);
  int code = report(it->second.run(options));
  llvm::outs().flush();
  // raw_ostream would report its own error as fatal when it flushes at
  // exit; exitAfterStdout reports it as one line (or not, for a pipe).
  int failed = 0;
  if (llvm::outs().has_error()) {
    failed = llvm::outs().error().value();
    llvm::outs().clear_error();
  }
  return tlm::cli::finishStdout(code, failed);
}
