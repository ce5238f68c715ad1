//===- Tokenizer.cpp - loading by path, decoding, streaming ---------------===//

#include "lib/io/Tokenizer.h"

#include <cstring>
#include <sys/stat.h>

namespace tlm::io {

Tokenizer::~Tokenizer() = default;

Expected<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string &path) {
  struct stat status;
  if (::stat(path.c_str(), &status) != 0)
    return makeError("tokenizer: " + path + ": " + std::strerror(errno));
  if (S_ISDIR(status.st_mode)) {
    // A Hugging Face folder may hold both; tokenizer.json is the complete
    // description (added tokens, normalizer, BOS).
    std::string json = path + "/tokenizer.json";
    if (::stat(json.c_str(), &status) == 0)
      return loadHfTokenizer(json);
    return loadGpt2Tokenizer(path);
  }
  if (endsWith(path, ".json"))
    return loadHfTokenizer(path);
  return loadLlama2cTokenizer(path);
}

Expected<std::string> Tokenizer::decode(Span<int64_t> ids) const {
  std::string text;
  int64_t prev = -1;
  for (int64_t id : ids) {
    Expected<std::string_view> bytes = piece(prev, id);
    if (!bytes)
      return bytes.takeError();
    text += *bytes;
    prev = id;
  }
  return text;
}

size_t completeUtf8Prefix(std::string_view bytes) {
  // Only the last lead byte can start an unfinished sequence, and a sequence
  // is at most 4 bytes, so look back at most 3 bytes for it.
  size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto c = static_cast<uint8_t>(bytes[n - back]);
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte: keep looking for its lead
    size_t need = (c & 0xE0) == 0xC0   ? 2
                  : (c & 0xF0) == 0xE0 ? 3
                  : (c & 0xF8) == 0xF0 ? 4
                                       : 1;
    return back < need ? n - back : n;
  }
  // Stray continuation bytes with no lead nearby can never be completed:
  // let them through rather than hold them forever.
  return n;
}

StreamDecoder::StreamDecoder(const Tokenizer &t, int64_t prev)
    : tokenizer(t), prev(prev) {}

Expected<std::string> StreamDecoder::feed(int64_t id) {
  Expected<std::string_view> bytes = tokenizer.piece(prev, id);
  if (!bytes)
    return bytes.takeError();
  prev = id;
  pending += *bytes;
  size_t done = completeUtf8Prefix(pending);
  std::string out = pending.substr(0, done);
  pending.erase(0, done);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  out.swap(pending);
  return out;
}

} // namespace tlm::io
