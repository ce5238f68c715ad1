//===- Tokenizer.cpp - loading by path, decoding, streaming ---------------===//

#include "lib/io/Tokenizer.h"

#include <cstring>
#include <sys/stat.h>

namespace tlm::io {

Tokenizer::~Tokenizer() = default;

namespace {

class ByteTokenizer : public Tokenizer {
public:
  ByteTokenizer() {
    for (int b = 0; b < 256; ++b)
      pieces[b] = char(b);
  }
  std::vector<int64_t> encode(std::string_view text, bool) const override {
    std::vector<int64_t> ids;
    ids.reserve(text.size());
    for (char c : text)
      ids.push_back(uint8_t(c));
    return ids;
  }
  Expected<std::string_view> piece(int64_t, int64_t id) const override {
    if (id < 0 || id > 255)
      return makeError("token id " + std::to_string(id) +
                       " is out of range [0, 256) of the byte tokenizer");
    return std::string_view(&pieces[id], 1);
  }
  int64_t vocabSize() const override { return 256; }
  int64_t bos() const override { return -1; }
  int64_t eos() const override { return -1; }

private:
  char pieces[256];
};

} // namespace

std::unique_ptr<Tokenizer> makeByteTokenizer() {
  return std::make_unique<ByteTokenizer>();
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string &path) {
  if (path == "bytes")
    return makeByteTokenizer();
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
