//===- Flags.cpp - the flags of the model-running commands ----------------===//

#include "tools/common/Flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sched.h>
#include <type_traits>
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

Error Flags::resolveNumbers() {
  if (Error err = readNumber("seed", seedText, seed))
    return err;
  if (Error err = readNumber("max-new-tokens", maxNewTokensText, maxNewTokens))
    return err;
  promptLenGiven = !promptLenText.empty();
  genGiven = !genText.empty();
  if (promptLenGiven)
    if (Error err = readNumber("prompt-len", promptLenText, promptLen))
      return err;
  if (genGiven)
    if (Error err = readNumber("gen", genText, gen))
      return err;
  if (Error err = readNumber("batch", batchText, batch))
    return err;
  if (Error err = readNumber("repeat", repeatText, repeat))
    return err;
  if (Error err = readNumber("context", contextText, evalContext))
    return err;
  if (Error err = readNumber("stride", strideText, evalStride))
    return err;
  if (Error err = readNumber("max-tokens", maxTokensText, maxTokens))
    return err;
  if (Error err = readNumber("temperature", temperatureText, temperature))
    return err;
  if (Error err = readNumber("top-k", topKText, topK))
    return err;
  if (Error err = readNumber("min-p", minPText, minP))
    return err;
  if (Error err =
          readNumber("repeat-penalty", repeatPenaltyText, repeatPenalty))
    return err;
  if (Error err = readNumber("repeat-last-n", repeatLastNText, repeatLastN))
    return err;
  if (Error err = readNumber("frequency-penalty", frequencyPenaltyText,
                             frequencyPenalty))
    return err;
  if (Error err =
          readNumber("presence-penalty", presencePenaltyText, presencePenalty))
    return err;
  samplingSeed = seed;
  if (!samplingSeedText.empty())
    if (Error err = readNumber("sampling-seed", samplingSeedText, samplingSeed))
      return err;
  return readNumber("top-p", topPText, topP);
}

Error Flags::readDouble(const char *flag, const std::string &text,
                        double &out) {
  return readNumber(flag, text, out);
}

const std::set<std::string> &runFlags(const std::string &command) {
  // What loading, running and timing a model take, whichever tool runs it.
  static const std::map<std::string, std::set<std::string>> table = {
      {"forward",
       {"config", "weights", "tokens", "tokens-file", "output", "target",
        "threads", "seed", "init", "weights-load", "huge-pages", "artifact",
        "weights-dtype", "quiet", "json", "cuda-graphs", "incremental"}},
      {"generate",
       {"config",
        "weights",
        "prompt-tokens",
        "prompt",
        "prompt-file",
        "prompts-file",
        "batch",
        "stop",
        "stop-tokens",
        "interactive",
        "quiet",
        "json",
        "tokenizer",
        "max-new-tokens",
        "temperature",
        "top-p",
        "top-k",
        "min-p",
        "repeat-penalty",
        "repeat-last-n",
        "frequency-penalty",
        "presence-penalty",
        "sampling-seed",
        "ignore-eos",
        "special",
        "echo",
        "seed",
        "target",
        "threads",
        "init",
        "weights-load",
        "huge-pages",
        "artifact",
        "weights-dtype",
        "cuda-graphs"}},
      {"bench",
       {"config", "weights", "prompt-len", "gen", "batch", "repeat", "threads",
        "target", "json", "quiet", "seed", "init", "weights-load", "huge-pages",
        "artifact", "weights-dtype", "cuda-graphs"}},
      {"eval",
       {"config", "weights", "tokens-file", "tokens-dtype", "context", "stride",
        "max-tokens", "json", "quiet", "threads", "target", "seed", "init",
        "weights-load", "huge-pages", "artifact", "weights-dtype",
        "cuda-graphs"}},
  };
  static const std::set<std::string> none;
  auto it = table.find(command);
  return it == table.end() ? none : it->second;
}

int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return 1;
}

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
