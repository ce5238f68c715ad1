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

/// The bit of a model command in Flags.def's command sets.
uint32_t commandBit(const std::string &name) {
  return name == "forward"    ? Forward
         : name == "generate" ? Generate
         : name == "eval"     ? Eval
                              : Bench;
}

/// Each command's --help ends with this.
const char *example(const std::string &command) {
  return command == "forward"
             ? "  tlm-exec forward model.so --tokens \"1 2 3\" -o "
               "logits.safetensors\n"
         : command == "generate"
             ? "  tlm-exec generate model.so --weights W.safetensors "
               "--prompt-tokens \"1 2 3\" --max-new-tokens 32\n"
         : command == "eval"
             ? "  tlm-exec eval model.so --weights W.safetensors --tokens-file "
               "T.safetensors\n"
             : "  tlm-exec bench model.so --repeat 5 --json\n";
}

void help(const std::string &command) {
  std::printf("tlm-exec %s: %s\n\nusage: tlm-exec %s MODEL.so [flags]\n\n"
              "EXAMPLES:\n%s\nflags (as tlm-run's, less the compiler's):\n%s",
              command.c_str(), commands().at(command).second, command.c_str(),
              example(command),
              flagHelp(commandBit(command), /*compiler=*/false).c_str());
}

/// Reads `argv` (after the command) into `f`: the command's flags, and the
/// artifact as the one word.
Error parseFlags(int argc, char **argv, const std::string &command, Flags &f) {
  std::vector<std::string> args(argv + 2, argv + argc);
  if (Error err = parseFlags(args, command, commandBit(command),
                             /*compiler=*/false, f))
    return err;
  if (f.positional.size() > 1)
    return userError("unexpected argument '" + f.positional[1] +
                     "' (quote lists of ids: --tokens \"1 2 3\")");
  if (!f.positional.empty() && f.isGiven("artifact"))
    return userError("two artifacts: give it once, as MODEL.so or with "
                     "--artifact");
  if (!f.positional.empty())
    f.artifact = f.positional[0];
  if (f.artifact.empty())
    return userError("no model: give the artifact (tlm-run compile) as "
                     "MODEL.so");
  return Error::success();
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
  if (name == "--version") {
    std::printf("tlm-exec %s\n", version());
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::vector<std::string> names;
    for (const auto &entry : commands())
      names.push_back(entry.first);
    report(unknownCommand(name, names));
    return usage(stderr);
  }
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-help") ||
        !std::strcmp(argv[i], "-h")) {
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
