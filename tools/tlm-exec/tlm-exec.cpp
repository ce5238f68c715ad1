//===- tlm-exec.cpp - run a compiled model without a compiler -------------===//
//
//   tlm-exec <forward|generate|eval|bench> MODEL.so [flags]
//
// The runtime's driver: it loads an ahead-of-time artifact (`tlm-run
// compile`) and runs it with the same commands, flags and output as tlm-run
// (tools/common), but links no LLVM or MLIR, so it builds and runs where
// only a C++ compiler is installed (docs/artifacts.md). The model's config
// comes from the artifact; --config, when given, must match it.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Commands.h"

#include "lib/runtime/Allocator.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unistd.h>
#include <map>

using namespace tlm;
using namespace tlm::cli;

namespace {

using Runner = Error (*)(const Flags &, const SessionMaker &);

const std::map<std::string, std::pair<Runner, const char *>> &commands() {
  static const std::map<std::string, std::pair<Runner, const char *>> table = {
      {"forward", {runForward, "logits for one sequence or a token file"}},
      {"generate", {runGenerate, "generate tokens with a KV cache"}},
      {"eval",
       {runEval,
        "mean next-token cross-entropy and perplexity of a token file"}},
      {"bench", {runBench, "prefill and decode speed, peak memory"}}};
  return table;
}

int usage(FILE *out) {
  std::fprintf(out, "usage: tlm-exec <command> MODEL.so [flags]   "
                    "(tlm-exec <command> --help)\ncommands:\n");
  for (const auto &[name, command] : commands())
    std::fprintf(out, "  %-16s%s\n", name.c_str(), command.second);
  return out == stdout ? 0 : 1;
}

/// The string-valued flags, by name.
const std::map<std::string, std::string Flags::*> &textFlags() {
  static const std::map<std::string, std::string Flags::*> table = {
      {"config", &Flags::config},
      {"weights", &Flags::weights},
      {"tokens", &Flags::tokens},
      {"tokens-file", &Flags::tokensFile},
      {"output", &Flags::output},
      {"target", &Flags::target},
      {"init", &Flags::init},
      {"prompt-tokens", &Flags::promptTokens},
      {"prompt", &Flags::prompt},
      {"tokenizer", &Flags::tokenizer},
      {"weights-load", &Flags::weightsLoad},
      {"weights-dtype", &Flags::weightsDtype},
      {"huge-pages", &Flags::hugePages},
      {"cuda-graphs", &Flags::cudaGraphs},
      {"artifact", &Flags::artifact},
      {"seed", &Flags::seedText},
      {"max-new-tokens", &Flags::maxNewTokensText},
      {"temperature", &Flags::temperatureText},
      {"top-p", &Flags::topPText},
      {"top-k", &Flags::topKText},
      {"min-p", &Flags::minPText},
      {"repeat-penalty", &Flags::repeatPenaltyText},
      {"repeat-last-n", &Flags::repeatLastNText},
      {"frequency-penalty", &Flags::frequencyPenaltyText},
      {"presence-penalty", &Flags::presencePenaltyText},
      {"sampling-seed", &Flags::samplingSeedText},
      {"prompt-file", &Flags::promptFile},
      {"prompts-file", &Flags::promptsFile},
      {"stop-tokens", &Flags::stopTokensText},
      {"stop", nullptr}, // several, below
      {"prompt-len", &Flags::promptLenText},
      {"gen", &Flags::genText},
      {"batch", &Flags::batchText},
      {"repeat", &Flags::repeatText},
      {"context", &Flags::contextText},
      {"stride", &Flags::strideText},
      {"max-tokens", &Flags::maxTokensText},
      {"tokens-dtype", &Flags::tokensDtype},
      {"threads", nullptr}, // an integer of its own, below
  };
  return table;
}

void help(const std::string &command) {
  std::printf("tlm-exec %s: %s\nusage: tlm-exec %s MODEL.so [flags]\nflags "
              "(as tlm-run's):\n",
              command.c_str(), commands().at(command).second, command.c_str());
  for (const std::string &flag : runFlags(command))
    std::printf("  --%s\n", flag.c_str());
}

/// Reads `argv` (after the command) into `f`: flags of the command only,
/// `--name value` or `--name=value`, and the artifact as the one word.
Error parseFlags(int argc, char **argv, const std::string &command, Flags &f) {
  const std::set<std::string> &allowed = runFlags(command);
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 && arg.rfind("-", 0) == 0 && arg.size() > 1)
      arg = "-" + arg; // -flag as --flag, as llvm::cl takes both
    if (arg.rfind("--", 0) != 0) {
      if (!f.artifact.empty())
        return userError("unexpected argument '" + arg +
                         "' (quote lists of ids: --tokens \"1 2 3\")");
      f.artifact = arg;
      continue;
    }
    std::string name = arg.substr(2), value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    if (!allowed.count(name))
      return userError("--" + name + " is not an option of '" + command + "'");
    if (name == "json" || name == "ignore-eos" || name == "quiet" ||
        name == "interactive" || name == "special" || name == "echo" ||
        name == "incremental") {
      if (hasValue)
        return userError("--" + name + " takes no value");
      (name == "json"          ? f.json
       : name == "quiet"       ? f.quiet
       : name == "interactive" ? f.interactive
       : name == "special"     ? f.special
       : name == "echo"        ? f.echo
       : name == "incremental" ? f.incremental
                               : f.ignoreEos) = true;
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= argc)
        return userError("--" + name + " needs a value");
      value = argv[++i];
    }
    if (name == "threads") {
      char *end = nullptr;
      long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < INT32_MIN || v > INT32_MAX)
        return userError("--threads expects an integer, found '" + value + "'");
      f.threads = static_cast<int>(v);
      f.threadsGiven = true;
      continue;
    }
    if (name == "stop") {
      f.stops.push_back(value);
      continue;
    }
    f.*textFlags().at(name) = value;
  }
  if (f.artifact.empty())
    return userError("no model: give the artifact (tlm-run compile) as "
                     "MODEL.so");
  return f.resolveNumbers();
}

} // namespace

int main(int argc, char **argv) {
  // A failed allocation (past setUp's estimate): one line and exit 1, as in
  // tlm-run, instead of std::bad_alloc's abort.
  std::set_new_handler([] {
    static const char message[] =
        "error: out of memory (the machine's memory, the process's ulimit "
        "-v or -d, or its cgroup's limit ran out; see docs/memory.md)\n";
    ssize_t written = ::write(2, message, sizeof(message) - 1);
    (void)written;
    std::_Exit(1);
  });
  runtime::keepFreedMemory();
  // A write past the file-size limit fails with EFBIG and is reported like
  // any write error; a closed stdout is a write error the commands see.
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  if (argc < 2)
    return usage(stderr);
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help")
    return usage(stdout);
  auto it = commands().find(name);
  if (it == commands().end()) {
    report(userError("unknown command '" + name + "'"));
    return usage(stderr);
  }
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-help")) {
      help(name);
      return 0;
    }
  Flags flags;
  flags.startRssMb = currentRssMb();
  flags.threads = flags.cores = availableCores();
  if (Error err = parseFlags(argc, argv, name, flags))
    return report(err);
  // The artifact's own session, and the config it records unless --config
  // names one (which must then be the same model).
  SessionMaker artifact = artifactSession;
  // A failed write to stdout is an error line, unless a pipe's reader left.
  return finishStdout(report(it->second.first(flags, artifact)), 0);
}
