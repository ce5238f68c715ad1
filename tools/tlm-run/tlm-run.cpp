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
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <unistd.h>

using namespace tlm;
using namespace tlm::cli;

namespace {

struct Command {
  Error (*run)(const Options &);
  /// Its bit in Flags.def's command sets.
  uint32_t bit;
  const char *help;
  /// What its --help ends with.
  const char *examples;
  /// Whether it takes words besides flags (files, folders).
  bool positional = false;
};

/// forward, generate, eval and bench (tools/common) on tlm-run's sessions.
template <Error (*Run)(const Flags &, const SessionMaker &)>
Error runModelCommand(const Options &o) {
  return Run(o.flags(), jitSessions(o));
}

/// bench, or with --train the training step's (which needs the compiler).
Error runBench(const Options &o) {
  return o.train ? runTrainBench(o) : runModelCommand<cli::runBench>(o);
}

const std::map<std::string, Command> &commands() {
  static const std::map<std::string, Command> table = {
      {"forward",
       {runModelCommand<runForward>, Forward,
        "logits for one sequence or a token file",
        "  tlm-run forward --config examples/tiny.json --tokens \"1 2 3\"\n"
        "  tlm-run forward --config C.json --weights W.safetensors "
        "--tokens-file T.safetensors -o logits.safetensors\n"}},
      {"generate",
       {runModelCommand<runGenerate>, Generate,
        "generate tokens with a KV cache",
        "  tlm-run generate --config examples/tiny.json --prompt-tokens \"1 2 "
        "3\" --max-new-tokens 16\n"
        "  tlm-run generate --config C.json --weights W.safetensors "
        "--tokenizer tokenizer.json --prompt \"Once upon a time\" "
        "--temperature 0.8 --top-p 0.9\n"}},
      {"bench",
       {runBench, Bench,
        "compile time, prefill and decode speed, peak memory",
        "  tlm-run bench --config examples/small.json --threads 2 --repeat 5 "
        "--json\n"
        "  tlm-run bench --train --config examples/cs336-ts.json --batch 8 "
        "--seq 16 --threads 1\n"}},
      {"eval",
       {runModelCommand<runEval>, Eval,
        "mean next-token cross-entropy and perplexity of a token file",
        "  tlm-run eval --config C.json --weights W.safetensors --tokens-file "
        "T.safetensors\n"
        "  tlm-run eval --config C.json --weights W.safetensors --tokens-file "
        "train.bin --tokens-dtype uint16 --context 512 --stride 256\n"}},
      {"emit",
       {runEmit, Emit, "print the IR of a stage",
        "  tlm-run emit --config examples/tiny.json --stage linalg "
        "--mlir-timing\n"}},
      {"init",
       {runInit, Init, "write seeded weights: --config C --output W.safetensors",
        "  tlm-run init --config examples/tiny.json -o W.safetensors --seed "
        "1\n"}},
      {"quantize",
       {runQuantize, Quantize,
        "write weights in another dtype: --config C [--weights W] --dtype "
        "bf16 --output OUT.safetensors",
        "  tlm-run quantize --config C.json --weights W.safetensors --dtype "
        "q8_0 -o W-q8.safetensors\n"}},
      {"tokenize",
       {runTokenize, Tokenize, "print the token ids of a text",
        "  tlm-run tokenize --tokenizer tokenizer.json --text \"Once upon a "
        "time\" --bos\n"}},
      {"detokenize",
       {runDetokenize, Detokenize, "print the text of token ids",
        "  tlm-run detokenize --tokenizer tokenizer.json --ids \"9038 2402\"\n"}},
      {"compile",
       {runCompile, Compile, "write a compiled model: --config C --output model.so",
        "  tlm-run compile --config examples/small.json -o small.so\n"}},
      {"switches",
       {runSwitches, Switches,
        "list the optimizations --disable switches off (--target cuda: the "
        "GPU pipeline's)",
        "  tlm-run switches --target cuda\n"}},
      {"import-llama2c",
       {runImportLlama2c, ImportLlama2c,
        "convert a llama2.c model.bin: MODEL.bin OUTDIR",
        "  tlm-run import-llama2c data/models/stories260K.bin /tmp/s260\n",
        true}},
      {"import-hf",
       {runImportHf, ImportHf,
        "convert a Hugging Face Llama-family folder: HF_DIR OUTDIR",
        "  tlm-run import-hf ~/models/TinyLlama-1.1B /tmp/tl\n", true}},
      {"grad",
       {runGrad, Grad,
        "the loss and every weight's gradient for a token file",
        "  tlm-run grad --config examples/tiny.json --tokens-file "
        "T.safetensors -o G.safetensors\n"
        "  tlm-run grad --config C.json --weights W.safetensors "
        "--tokens-file T.safetensors -o G.safetensors --threads 1\n"}},
      {"train",
       {runTrain, Train,
        "optimizer steps (AdamW, clipping) over a token file's rows",
        "  tlm-run train --config examples/tiny.json --tokens-file "
        "T.safetensors --batch 4 --steps 50 --lr 1e-3 -o W.safetensors\n"}},
      {"train-tokenizer",
       {runTrainTokenizer, TrainTokenizer,
        "train a byte-level BPE tokenizer on a text file (CS336 section 2)",
        "  tlm-run train-tokenizer --text-file corpus.txt --vocab-size 500 "
        "--special-token '<|endoftext|>' -o tokenizer.json\n"}},
      {"compare",
       {runCompare, Compare,
        "compare two safetensors tensors: A.st:name B.st:name",
        "  tlm-run compare a.st:logits b.st:logits --atol 1e-5\n", true}},
  };
  return table;
}

/// The commands that run MLIR's pass pipeline (unless given --artifact), so
/// MLIR's --mlir-* flags mean something there.
bool runsPipeline(const Command &command) {
  return command.bit & (Model | Compile | Emit | Grad | Train);
}

/// The MLIR flags a command's --help shows (all --mlir-* parse; these are
/// the ones a user of tlm reaches for).
const char *const shownMlirFlags[] = {
    "mlir-timing", "mlir-print-ir-after-all", "mlir-print-ir-before-all",
    "mlir-print-ir-after-failure", "mlir-pass-statistics"};

int usage(llvm::raw_ostream &os) {
  os << "usage: tlm-run <command> [flags]   (tlm-run <command> --help)\n"
        "commands:\n";
  for (const auto &[name, cmd] : commands())
    os << "  " << llvm::left_justify(name, 16) << cmd.help << "\n";
  return 1;
}

void commandHelp(const std::string &name, const Command &command) {
  llvm::outs() << "tlm-run " << name << ": " << command.help
               << "\n\nusage: tlm-run " << name
               << (command.positional ? " ARGS" : "") << " [flags]\n\n"
               << "EXAMPLES:\n"
               << command.examples << "\nflags:\n"
               << flagHelp(command.bit, /*compiler=*/true);
  if (!runsPipeline(command))
    return;
  llvm::outs() << "\nMLIR's flags, which observe the compile pipeline (every "
                  "--mlir-* flag works):\n";
  for (const char *flag : shownMlirFlags)
    if (auto *opt = llvm::cl::getRegisteredOptions().lookup(flag))
      llvm::outs() << "  --" << llvm::left_justify(flag, 30) << opt->HelpStr
                   << "\n";
}

/// Hands the --mlir-* flags to MLIR's own options, where a pipeline runs
/// to observe them; elsewhere they would be ignored, so they are refused.
Error parseMlirFlags(const char *argv0, const std::string &name,
                     const Command &command, const Options &options,
                     const std::vector<std::string> &mlirFlags) {
  if (mlirFlags.empty())
    return Error::success();
  std::string flag = llvm::StringRef(mlirFlags[0]).split('=').first.str();
  if (!runsPipeline(command))
    return flagError(flag + " observes MLIR's pass pipeline, which '" + name +
                     "' does not run (forward, generate, eval, bench, "
                     "compile and emit do)");
  if (!options.artifact.empty())
    return flagError(flag + " observes MLIR's pass pipeline, which '" + name +
                     " --artifact' does not run (the artifact is compiled)");
  std::vector<const char *> args = {argv0};
  for (const std::string &f : mlirFlags)
    args.push_back(f.c_str());
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  // A bad value (--mlir-print-debuginfo=maybe) is said by the option's own
  // parser straight to stderr, not to `errs`: stderr is caught here for
  // the call, so the user sees one error line of ours, not LLVM's line and
  // then an empty one.
  llvm::errs().flush();
  std::fflush(stderr);
  std::FILE *caught = std::tmpfile();
  int savedStderr = caught ? ::dup(2) : -1;
  if (savedStderr >= 0)
    ::dup2(::fileno(caught), 2);
  bool parsed =
      llvm::cl::ParseCommandLineOptions(args.size(), args.data(), "", &errs);
  llvm::errs().flush();
  if (savedStderr >= 0) {
    ::dup2(savedStderr, 2);
    ::close(savedStderr);
    std::rewind(caught);
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof(buf), caught);
    // A parse that went through keeps what it said (a warning) on stderr.
    if (parsed)
      std::fwrite(buf, 1, n, stderr);
    else
      parseErrors = std::string(buf, n) + parseErrors;
  }
  if (caught)
    std::fclose(caught);
  if (!parsed) {
    llvm::StringRef msg = llvm::StringRef(parseErrors).trim();
    // llvm::cl prefixes its messages with the program's file name.
    msg.consume_front(argv0);
    msg.consume_front(llvm::sys::path::filename(argv0));
    msg = msg.ltrim(": ");
    return flagError(msg.split('\n').first);
  }
  return Error::success();
}

/// Reads the flags of command `name` into `options`: a flag of another
/// command, a stray word or a malformed value is a user error.
Error parseFlags(int argc, char **argv, const std::string &name,
                 const Command &command, Options &options) {
  std::vector<std::string> args(argv + 2, argv + argc), mlirFlags;
  if (Error err = parseFlags(args, name, command.bit, /*compiler=*/true,
                             options, &mlirFlags))
    return err;
  if (Error err = parseMlirFlags(argv[0], name, command, options, mlirFlags))
    return err;
  // Stray words (an unquoted `--tokens 1 2 3`) must not be dropped silently.
  if (!command.positional && !options.positional.empty())
    return flagError("unexpected argument '" + options.positional[0] +
                     "' (quote lists of ids: --tokens \"1 2 3\")");
  return Error::success();
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
  if (name == "--version") {
    llvm::outs() << "tlm-run " << version() << " (MLIR " LLVM_VERSION_STRING
                 << ")\n";
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::vector<std::string> names;
    for (const auto &entry : commands())
      names.push_back(entry.first);
    report(unknownCommand(name, names));
    return usage(llvm::errs());
  }

  Options options;
  options.startRssMb = currentRssMb();
  options.threads = options.cores = availableCores();
  mlir::registerPassManagerCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-help") ||
        !std::strcmp(argv[i], "-h")) {
      commandHelp(name, it->second);
      return 0;
    }
  if (Error err = parseFlags(argc, argv, name, it->second, options))
    return report(err);
  chooseThreads(name, options);
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
