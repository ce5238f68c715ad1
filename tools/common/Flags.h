//===- Flags.h - the flags of tlm-run and tlm-exec --------------*- C++ -*-===//
//
// forward, generate, eval and bench run in two tools: tlm-run (which
// compiles) and tlm-exec (which loads an artifact and has no compiler).
// Every flag of both is one row of Flags.def, which gives its type, default,
// help and commands; this header derives from it the values (Flags), the
// parser and the help of both tools, so a flag is declared once.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_COMMON_FLAGS_H
#define TLM_TOOLS_COMMON_FLAGS_H

#include "lib/support/Error.h"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tlm::cli {

/// The commands, as the bits of a flag's command set (Flags.def).
enum CommandBit : uint32_t {
  Forward = 1u << 0,
  Generate = 1u << 1,
  Eval = 1u << 2,
  Bench = 1u << 3,
  Emit = 1u << 4,
  Init = 1u << 5,
  Quantize = 1u << 6,
  Tokenize = 1u << 7,
  Detokenize = 1u << 8,
  Compile = 1u << 9,
  Switches = 1u << 10,
  Compare = 1u << 11,
  ImportLlama2c = 1u << 12,
  ImportHf = 1u << 13,
  Grad = 1u << 14,
  Train = 1u << 15,
  TrainTokenizer = 1u << 16,
  /// The model commands, which both tools run.
  Model = Forward | Generate | Eval | Bench,
  /// tlm-exec's --help: a TLM_FLAG_FOR row for it says what a flag means
  /// when the model is an artifact (after any row for the command).
  ArtifactRunner = 1u << 30,
  /// A flag of the compiler: tlm-run takes it, tlm-exec does not.
  CompilerOnly = 1u << 31,
};

enum class FlagType { Text, Bool, List, Int, Int64, UInt64, Double };

/// The C++ type a flag's value is held in.
template <FlagType> struct FlagValue;
template <> struct FlagValue<FlagType::Text> { using type = std::string; };
template <> struct FlagValue<FlagType::Bool> { using type = bool; };
template <> struct FlagValue<FlagType::List> {
  using type = std::vector<std::string>;
};
template <> struct FlagValue<FlagType::Int> { using type = int; };
template <> struct FlagValue<FlagType::Int64> { using type = int64_t; };
template <> struct FlagValue<FlagType::UInt64> { using type = uint64_t; };
template <> struct FlagValue<FlagType::Double> { using type = double; };

/// One row of Flags.def.
struct FlagInfo {
  const char *name;
  FlagType type;
  /// As a user would type it; empty: none, or one the help describes.
  const char *defaultValue;
  const char *valueName;
  uint32_t commands;
  const char *help;
};

/// Every flag, in Flags.def's order.
const std::vector<FlagInfo> &flagTable();
/// The flag called `name`, or null.
const FlagInfo *findFlag(std::string_view name);

/// The values of every flag, at their defaults until parsed.
struct Flags {
#define TLM_FLAG(field, name, kind, def, value, commands, help)                \
  FlagValue<FlagType::kind>::type field{};
#include "tools/common/Flags.def"

  /// Every flag at its Flags.def default.
  Flags();
  /// Sets flag `info` from the text `value` (a List appends); a malformed
  /// or out-of-range number is an error naming the flag.
  Error set(const FlagInfo &info, const std::string &value);

  /// The flags given on the command line, by name.
  std::set<std::string> given;
  bool isGiven(const std::string &name) const { return given.count(name); }
  /// The words that are not flags (compare's files, tlm-exec's artifact).
  std::vector<std::string> positional;

  /// Derived by parseFlags: whether --threads, --prompt-len and --gen were
  /// given (bench fits the last two to the model's context otherwise).
  bool threadsGiven = false, promptLenGiven = false, genGiven = false;
  /// The cores this process may run on (its CPU affinity): --threads'
  /// default, but for a model too small to share (tlm-run's
  /// chooseThreads).
  int cores = 1;
  /// Why --threads is what it is when it was not given and the model chose
  /// it (bench prints it); empty otherwise.
  std::string threadsChoice;
  /// Resident memory when the tool started: its own code and data.
  double startRssMb = 0;
};

/// Reads `args` (the words after the command) into `flags`: the flags of
/// `command` (a CommandBit; `name` for messages) as `--name value`,
/// `--name=value` or `-name value`, `-o` for --output, and other words into
/// flags.positional. A flag of another command, or an unknown one (with the
/// likeliest meant one), is an error. Words starting with `--mlir-` go to
/// `mlirFlags` when it is given (tlm-run hands them to MLIR). `compiler`:
/// the tool takes CompilerOnly flags.
Error parseFlags(const std::vector<std::string> &args, const std::string &name,
                 uint32_t command, bool compiler, Flags &flags,
                 std::vector<std::string> *mlirFlags = nullptr);

/// `command`'s flags for --help: each with its value, help and default.
/// TLM_FLAG_FOR rows replace a flag's value name and help for a command.
std::string flagHelp(uint32_t command, bool compiler);

/// The candidate nearest `word` by edit distance, if near enough to be a
/// likely typo; empty otherwise.
std::string closest(std::string_view word,
                    const std::vector<std::string> &candidates);

/// "unknown command 'NAME'", with the nearest of `commands` when one is
/// likely meant; exit code 1.
Error unknownCommand(const std::string &name,
                     const std::vector<std::string> &commands);

/// Whether `path` names this process's standard output (/dev/stdout, a
/// link to it, or the file stdout is redirected to).
bool isStandardOutput(const std::string &path);

/// The cores this process may run on (its affinity mask, so a `taskset`
/// or a container's CPU set is honoured).
int availableCores();

/// Resident memory of this process now, MiB.
double currentRssMb();

/// The tools' version (CMake's project version).
const char *version();

} // namespace tlm::cli

#endif // TLM_TOOLS_COMMON_FLAGS_H
