//===- GenerateParts.h - what generate's two forms share --------*- C++ -*-===//
//
// The sampling flags, the prompt the flags give, and the printer of a
// turn's tokens, shared by one sequence's generate (Generate.cpp, which
// prints as tokens come) and several prompts' (GenerateBatch.cpp, which
// collects each sequence's text and prints it at the end).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_COMMON_GENERATEPARTS_H
#define TLM_TOOLS_COMMON_GENERATEPARTS_H

#include "tools/common/Commands.h"
#include "tools/common/Flags.h"

#include "lib/io/Tokenizer.h"
#include "lib/runtime/Sampler.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tlm::cli {

/// generate's flags that do not depend on the model, checked: what needs
/// --tokenizer, empty stop strings, --max-new-tokens.
Error checkGenerateFlags(const Flags &f);

/// --tokenizer loaded and checked against the model (null without one).
Expected<std::unique_ptr<io::Tokenizer>>
generateTokenizer(const Flags &f, const model::Config &config);

/// --stop-tokens as ids.
Expected<std::vector<int64_t>> stopTokenIds(const Flags &f);

/// What generate loads once its flags are checked: the stop tokens, the
/// config, and the tokenizer (null without --tokenizer).
struct GenerateModel {
  std::set<int64_t> stopTokens;
  model::Config config;
  std::unique_ptr<io::Tokenizer> tokenizer;
};

/// --stop-tokens, the config, then the tokenizer checked against it.
Expected<GenerateModel> loadGenerateModel(const Flags &f);

/// The error generation ends with on SIGINT or SIGTERM: exit code 128 + the
/// signal, the message ending in how far it got (`progress`).
Error interruptedAfter(const std::string &progress);

/// generate with several sequences decoding together (--prompts-file, or
/// --batch copies of one prompt): GenerateBatch.cpp.
Error runGenerateBatch(const Flags &f, const SessionMaker &make);

/// generate's sampling flags, checked.
Expected<runtime::SamplingOptions> samplingOptions(const Flags &f);

/// --prompt, or the text of --prompt-file.
Expected<std::string> promptText(const Flags &f);

/// The prompt the flags give, as ids (empty for --interactive without one).
Expected<std::vector<int64_t>> promptIds(const Flags &f,
                                         const std::string &text,
                                         const io::Tokenizer *tokenizer);

/// What --echo prints before the continuation: the prompt's text, or its
/// ids each followed by a space.
Expected<std::string> promptEcho(const std::vector<int64_t> &ids,
                                 const io::Tokenizer *tokenizer);

/// Why a sequence's turn ended; Reader: the reader of the output went away.
enum class Stop { MaxTokens, Eos, StopToken, StopString, Context, Reader };

/// `stop` as --json names it.
const char *stopName(Stop stop);

/// Prints a turn's tokens: text as it streams, less what could still turn
/// out to begin a stop string, or ids. To `out` unless it is null, and
/// appended to `sink` unless it is null.
class Printer {
public:
  Printer(const io::Tokenizer *tokenizer, int64_t prev,
          const std::vector<std::string> &stops, std::FILE *out,
          std::string *sink);

  /// Prints `id`'s text; true when it completes a stop string, of which
  /// (and of anything after it) nothing is printed.
  Expected<bool> add(int64_t id);

  /// The turn ended without a stop string: what was held back is text.
  void finish();

private:
  void write(const char *data, size_t size);
  const std::vector<std::string> &stops_;
  std::optional<io::StreamDecoder> stream_;
  std::string held_;
  std::FILE *out_;
  std::string *sink_;
  bool first_ = true;
};

} // namespace tlm::cli

#endif // TLM_TOOLS_COMMON_GENERATEPARTS_H
