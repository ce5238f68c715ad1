//===- Flags.h - the flags of the model-running commands --------*- C++ -*-===//
//
// forward, generate, eval and bench run in two tools: tlm-run (which
// compiles) and tlm-exec (which loads an artifact and has no compiler).
// Both fill these plain values from their command lines, so the commands
// (Commands.h) are one implementation with one set of flags, defaults and
// messages.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_COMMON_FLAGS_H
#define TLM_TOOLS_COMMON_FLAGS_H

#include "lib/support/Error.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace tlm::cli {

struct Flags {
  std::string config, weights, tokens, tokensFile, output, target = "cpu",
                                                           init = "module";
  std::string promptTokens, prompt, tokenizer;
  std::string weightsLoad = "read", hugePages = "on";
  /// --cuda-graphs: on or off (decode steps as CUDA graphs).
  std::string cudaGraphs = "off";
  std::string artifact, cacheDir;
  /// --weights-dtype: how the weight matrices are stored (f32, bf16, f16);
  /// empty: the weights file's, else the config's.
  std::string weightsDtype;
  bool json = false, noCache = false;
  /// Nothing on stderr but errors: no progress (Progress.h), and no
  /// summary from generate.
  bool quiet = false;
  /// Numbers as given; resolveNumbers() reads them into the fields below,
  /// so a malformed one gets one `error:` line naming its flag.
  std::string seedText = "0", maxNewTokensText = "32", temperatureText = "0.0",
              topPText = "1.0", promptLenText, genText, batchText = "1";
  /// generate's sampling controls (runtime::SamplingOptions), as given;
  /// an empty sampling seed means --seed's.
  std::string topKText = "0", minPText = "0", repeatPenaltyText = "1",
              repeatLastNText = "64", frequencyPenaltyText = "0",
              presencePenaltyText = "0", samplingSeedText;
  std::string promptFile;
  /// generate: one prompt per line, decoded together as one batch.
  std::string promptsFile;
  /// generate: stop strings (several), stop token ids ("2 13"), and lines
  /// of stdin as further prompts.
  std::vector<std::string> stops;
  std::string stopTokensText;
  bool ignoreEos = false, interactive = false;
  /// generate: the tokenizer's added tokens in the prompt are single ids;
  /// the prompt is printed before the continuation.
  bool special = false, echo = false;
  /// forward: each position's logits from a one-token step over the KV
  /// cache (decode's code) rather than from one prefill of all.
  bool incremental = false;
  /// Whether --prompt-len and --gen were given (bench fits its defaults
  /// to the model's context otherwise).
  bool promptLenGiven = false, genGiven = false;
  uint64_t seed = 0, samplingSeed = 0;
  int maxNewTokens = 32, promptLen = 128, gen = 32, batch = 1, repeat = 1;
  std::string repeatText = "1";
  /// eval's windows over a flat stream (0: not given) and a raw file's id
  /// type.
  std::string contextText = "0", strideText = "0", maxTokensText = "0",
              tokensDtype;
  int64_t evalContext = 0, evalStride = 0, maxTokens = 0;
  double temperature = 0.0, topP = 1.0;
  int64_t topK = 0, repeatLastN = 64;
  double minP = 0, repeatPenalty = 1, frequencyPenalty = 0, presencePenalty = 0;
  Error resolveNumbers();
  /// `text` as a number for --`flag` (an error names it).
  static Error readDouble(const char *flag, const std::string &text,
                          double &out);

  /// --threads; default: every core this process may run on.
  int threads = 1;
  bool threadsGiven = false;
  /// The cores this process may run on (its CPU affinity).
  int cores = 1;
  /// Resident memory when the tool started: its own code and data.
  double startRssMb = 0;
};

/// The flags `command` (forward, generate, eval, bench) takes in both tools;
/// tlm-run adds its compile flags. Empty for other commands.
const std::set<std::string> &runFlags(const std::string &command);

/// The cores this process may run on (its affinity mask, so a `taskset`
/// or a container's CPU set is honoured).
int availableCores();

/// Resident memory of this process now, MiB.
double currentRssMb();

} // namespace tlm::cli

#endif // TLM_TOOLS_COMMON_FLAGS_H
