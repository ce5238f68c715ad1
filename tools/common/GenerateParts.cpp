//===- GenerateParts.cpp - what generate's two forms share ----------------===//

#include "tools/common/GenerateParts.h"
#include "tools/common/Commands.h"

#include "lib/io/FileIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tlm::cli {

/// generate's sampling flags, checked.
Expected<runtime::SamplingOptions> samplingOptions(const Flags &f) {
  if (!(f.temperature >= 0) || !std::isfinite(f.temperature))
    return userError("--temperature must be a finite number >= 0");
  if (!(f.topP > 0 && f.topP <= 1))
    return userError("--top-p must be in (0, 1]");
  if (f.topK < 0)
    return userError("--top-k must be >= 0 (0: every token)");
  if (!(f.minP >= 0 && f.minP <= 1))
    return userError("--min-p must be in [0, 1]");
  if (!(f.repeatPenalty > 0) || !std::isfinite(f.repeatPenalty))
    return userError("--repeat-penalty must be a finite number > 0");
  if (f.repeatLastN < 0)
    return userError("--repeat-last-n must be >= 0");
  if (!std::isfinite(f.frequencyPenalty) || !std::isfinite(f.presencePenalty))
    return userError("--frequency-penalty and --presence-penalty must be "
                     "finite numbers");
  runtime::SamplingOptions o;
  o.temperature = f.temperature;
  o.topP = f.topP;
  o.topK = f.topK;
  o.minP = f.minP;
  o.repeatPenalty = f.repeatPenalty;
  o.repeatLastN = f.repeatLastN;
  o.frequencyPenalty = f.frequencyPenalty;
  o.presencePenalty = f.presencePenalty;
  o.seed = f.samplingSeed;
  return o;
}

Expected<GenerateModel> loadGenerateModel(const Flags &f) {
  GenerateModel m;
  auto stopIds = stopTokenIds(f);
  if (!stopIds)
    return stopIds.takeError();
  m.stopTokens.insert(stopIds->begin(), stopIds->end());
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  m.config = std::move(*config);
  auto tokenizer = generateTokenizer(f, m.config);
  if (!tokenizer)
    return tokenizer.takeError();
  m.tokenizer = std::move(*tokenizer);
  return std::move(m);
}

Error interruptedAfter(const std::string &progress) {
  int signal = stopRequested;
  return Error::withExitCode(128 + signal,
                             std::string("interrupted by ") +
                                 (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                                 " after " + progress);
}

/// --prompt, or the text of --prompt-file.
Expected<std::string> promptText(const Flags &f) {
  if (f.promptFile.empty())
    return f.prompt;
  // A prompt is text for the tokenizer: 16 MiB bounds the read.
  auto read = io::readInput(f.promptFile, 16 << 20);
  if (!read)
    return userError("--prompt-file: " + read.takeError().message());
  if (read->empty())
    return userError("--prompt-file: " + f.promptFile + " is empty");
  return read;
}

/// The prompt the flags give, as ids (empty for --interactive without one).
Expected<std::vector<int64_t>> promptIds(const Flags &f,
                                         const std::string &text,
                                         const io::Tokenizer *tokenizer) {
  if (!f.promptTokens.empty())
    return parseIds("prompt-tokens", f.promptTokens);
  if (text.empty())
    return std::vector<int64_t>();
  std::vector<int64_t> ids = tokenizer->encode(text, tokenizer->bos() >= 0);
  if (ids.empty())
    return userError("the prompt encodes to no tokens");
  return ids;
}

Expected<std::string> promptEcho(const std::vector<int64_t> &ids,
                                 const io::Tokenizer *tokenizer) {
  if (tokenizer)
    return tokenizer->decode(ids);
  std::string text;
  for (int64_t id : ids)
    text += std::to_string(id) + " ";
  return text;
}

const char *stopName(Stop stop) {
  switch (stop) {
  case Stop::MaxTokens:
    return "max_new_tokens";
  case Stop::Eos:
    return "eos";
  case Stop::StopToken:
    return "stop_token";
  case Stop::StopString:
    return "stop_string";
  case Stop::Context:
    return "context_length";
  case Stop::Reader:
    return "output_closed";
  }
  return "";
}

Printer::Printer(const io::Tokenizer *tokenizer, int64_t prev,
                 const std::vector<std::string> &stops, std::FILE *out,
                 std::string *sink)
    : stops_(stops), out_(out), sink_(sink) {
  if (tokenizer)
    stream_.emplace(*tokenizer, prev);
}

void Printer::write(const char *data, size_t size) {
  if (sink_)
    sink_->append(data, size);
  if (out_)
    std::fwrite(data, 1, size, out_);
}

Expected<bool> Printer::add(int64_t id) {
  if (!stream_) {
    std::string text = (first_ ? "" : " ") + std::to_string(id);
    write(text.data(), text.size());
    first_ = false;
    return false;
  }
  auto text = stream_->feed(id);
  if (!text)
    return text.takeError();
  held_ += *text;
  size_t at = std::string::npos;
  for (const std::string &stop : stops_)
    at = std::min(at, held_.find(stop));
  if (at != std::string::npos) {
    write(held_.data(), at);
    held_.clear();
    return true;
  }
  // Keep the longest end of the text that begins some stop string.
  size_t keep = 0;
  for (const std::string &stop : stops_)
    for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
        keep = n;
        break;
      }
  write(held_.data(), held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

void Printer::finish() {
  if (stream_)
    held_ += stream_->finish();
  write(held_.data(), held_.size());
  held_.clear();
}

} // namespace tlm::cli
