//===- Flags.cpp - the flags of the model-running commands ----------------===//

#include "tools/common/Flags.h"

#include "lib/runtime/CpuFeatures.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sched.h>
#include <type_traits>
#include <sys/stat.h>
#include <unistd.h>

namespace tlm::cli {

namespace {

std::string trim(const std::string &s) {
  size_t begin = s.find_first_not_of(" \t\n\r");
  if (begin == std::string::npos)
    return "";
  return s.substr(begin, s.find_last_not_of(" \t\n\r") - begin + 1);
}

/// `text` (whole, after trimming) as a T; an error names `flag`.
template <typename T>
Error readNumber(const char *flag, const std::string &given, T &out) {
  std::string text = trim(given);
  // A sign only where it means something (as llvm::cl took them).
  bool ok = !text.empty() && (std::is_floating_point_v<T> || text[0] != '+');
  // An integer that is one but does not fit says so, with the bound.
  bool inRange = true;
  if (ok) {
    errno = 0;
    char *end = nullptr;
    if constexpr (std::is_floating_point_v<T>) {
      out = std::strtod(text.c_str(), &end);
    } else if constexpr (std::is_unsigned_v<T>) {
      unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      ok = text[0] != '-';
      inRange = errno != ERANGE && v <= std::numeric_limits<T>::max();
      out = static_cast<T>(v);
    } else {
      long long v = std::strtoll(text.c_str(), &end, 10);
      inRange = errno != ERANGE && v >= std::numeric_limits<T>::min() &&
                v <= std::numeric_limits<T>::max();
      out = static_cast<T>(v);
    }
    ok = ok && end == text.c_str() + text.size() &&
         (std::is_integral_v<T> || errno == 0);
  }
  const std::string &shown = given; // report() escapes and bounds it
  if (ok && !inRange) {
    bool below = text[0] == '-';
    std::string bound =
        below ? std::to_string(std::numeric_limits<T>::min())
              : std::to_string(std::numeric_limits<T>::max());
    return Error::withExitCode(1, std::string("--") + flag + " must be " +
                                      (below ? "at least " : "at most ") +
                                      bound + ", found '" + shown + "'");
  }
  if (ok)
    return Error::success();
  const char *what = std::is_floating_point_v<T> ? "a number"
                     : std::is_unsigned_v<T>     ? "a non-negative integer"
                                                 : "an integer";
  return Error::withExitCode(1, std::string("--") + flag + " expects " + what +
                                    ", found '" + shown + "'");
}

} // namespace

namespace {

/// A mistake on the command line: exit code 1.
Error flagError(std::string message) {
  return Error::withExitCode(1, std::move(message));
}

/// `text` into a flag's value; numbers through readNumber.
Error assign(const char *flag, const std::string &text, std::string &out) {
  out = text;
  return Error::success();
}
Error assign(const char *flag, const std::string &text,
             std::vector<std::string> &out) {
  out.push_back(text);
  return Error::success();
}
Error assign(const char *flag, const std::string &text, bool &out) {
  out = true;
  return Error::success();
}
template <typename T>
Error assign(const char *flag, const std::string &text, T &out) {
  return readNumber(flag, text, out);
}

/// Levenshtein distance, for "did you mean".
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool takes(const FlagInfo &info, uint32_t command, bool compiler) {
  return (info.commands & command) && (compiler || !(info.commands & CompilerOnly));
}

/// The TLM_FLAG_FOR row of `name` in `command`, if any.
struct FlagFor {
  uint32_t command;
  const char *name, *valueName, *help;
};
const std::vector<FlagFor> &flagsFor() {
  static const std::vector<FlagFor> table = {
#define TLM_FLAG(field, name, type, def, value, commands, help)
#define TLM_FLAG_FOR(command, name, value, help) {command, name, value, help},
#include "tools/common/Flags.def"
  };
  return table;
}

/// One flag's --help entry: `--name VALUE` padded to a column, then the
/// help and the default (on the next line when the name is long).
std::string helpLine(const FlagInfo &info, uint32_t command) {
  const char *value = info.valueName, *help = info.help;
  for (const FlagFor &f : flagsFor())
    if ((f.command & command) && std::string_view(f.name) == info.name)
      value = f.valueName, help = f.help;
  std::string left = std::string("  --") + info.name;
  if (std::string_view(info.name) == "output")
    left += ", -o";
  if (*value)
    left += std::string(" ") + value;
  std::string right = help;
  if (*info.defaultValue)
    right += std::string(" (default: ") + info.defaultValue + ")";
  constexpr size_t column = 34;
  if (left.size() + 2 > column)
    return left + "\n" + std::string(column, ' ') + right + "\n";
  return left + std::string(column - left.size(), ' ') + right + "\n";
}

} // namespace

const std::vector<FlagInfo> &flagTable() {
  static const std::vector<FlagInfo> table = {
#define TLM_FLAG(field, name, kind, def, value, commands, help)                \
  {name, FlagType::kind, def, value, commands, help},
#include "tools/common/Flags.def"
  };
  return table;
}

const FlagInfo *findFlag(std::string_view name) {
  for (const FlagInfo &info : flagTable())
    if (name == info.name)
      return &info;
  return nullptr;
}

Flags::Flags() {
  for (const FlagInfo &info : flagTable())
    if (*info.defaultValue && info.type != FlagType::Bool) {
      [[maybe_unused]] Error err = set(info, info.defaultValue);
      assert(!err && "a default in Flags.def does not parse");
    }
}

Error Flags::set(const FlagInfo &info, const std::string &value) {
  std::string_view name = info.name;
#define TLM_FLAG(field, flag, type, def, valueName, commands, help)            \
  if (name == flag)                                                            \
    return assign(flag, value, field);
#include "tools/common/Flags.def"
  assert(false && "a FlagInfo not in Flags.def");
  return Error::success();
}

std::string closest(std::string_view word,
                    const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDistance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string &c : candidates)
    if (size_t d = editDistance(word, c); d < bestDistance)
      best = c, bestDistance = d;
  return best;
}

Error parseFlags(const std::vector<std::string> &args, const std::string &name,
                 uint32_t command, bool compiler, Flags &flags,
                 std::vector<std::string> *mlirFlags) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-o")
      arg = "--output";
    else if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-')
      arg = "-" + arg; // -flag as --flag, as llvm::cl took both
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      flags.positional.push_back(args[i]);
      continue;
    }
    if (mlirFlags && arg.compare(0, 7, "--mlir-") == 0) {
      mlirFlags->push_back(arg);
      continue;
    }
    std::string flag = arg.substr(2), value;
    bool hasValue = false;
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      hasValue = true;
    }
    const FlagInfo *info = findFlag(flag);
    if (info && !takes(*info, command, compiler))
      return flagError("--" + flag + " is not an option of '" + name + "'");
    if (!info) {
      std::vector<std::string> known;
      for (const FlagInfo &f : flagTable())
        if (takes(f, command, compiler))
          known.push_back(f.name);
      std::string guess = closest(flag, known);
      return flagError("unknown flag '--" + flag + "'" +
                       (guess.empty() ? "" : " (did you mean --" + guess + "?)"));
    }
    if (info->type == FlagType::Bool) {
      if (hasValue)
        return flagError("--" + flag + " takes no value");
    } else if (!hasValue) {
      if (i + 1 >= args.size())
        return flagError("--" + flag + " needs a value");
      value = args[++i];
    }
    // The model's files are given once: with two, which one runs would be
    // a matter of order, and a script that appends one would silently
    // run another model.
    if (flags.isGiven(flag) &&
        (flag == "artifact" || flag == "config" || flag == "weights"))
      return flagError("--" + flag + " is given twice: give one");
    if (Error err = flags.set(*info, value))
      return err;
    flags.given.insert(flag);
  }
  // --json's document is all stdout holds: a file written there too would
  // be neither.
  if (flags.json && !flags.output.empty() && isStandardOutput(flags.output))
    return flagError("--output " + flags.output +
                     " is standard output, which --json's document takes: "
                     "write the file elsewhere, or drop --json");
  flags.threadsGiven = flags.isGiven("threads");
  if (!flags.threadsGiven)
    flags.threads = flags.cores;
  flags.promptLenGiven = flags.isGiven("prompt-len");
  flags.genGiven = flags.isGiven("gen");
  if (!flags.isGiven("sampling-seed"))
    flags.samplingSeed = flags.seed;
  return Error::success();
}

bool isStandardOutput(const std::string &path) {
  struct stat file, out;
  return ::stat(path.c_str(), &file) == 0 && ::fstat(1, &out) == 0 &&
         file.st_dev == out.st_dev && file.st_ino == out.st_ino;
}

Error unknownCommand(const std::string &name,
                     const std::vector<std::string> &commands) {
  std::string guess = closest(name, commands);
  return flagError("unknown command '" + name + "'" +
                   (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
}

std::string flagHelp(uint32_t command, bool compiler) {
  std::string text;
  for (const FlagInfo &info : flagTable())
    if (takes(info, command, compiler))
      text += helpLine(info, compiler ? command : command | ArtifactRunner);
  return text;
}

const char *version() { return TLM_VERSION; }

int availableCores() { return runtime::usableCores(); }

double currentRssMb() {
  // statm's second field: resident pages.
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return resident * double(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

} // namespace tlm::cli
