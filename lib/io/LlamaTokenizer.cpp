//===- LlamaTokenizer.cpp - llama2.c's tokenizer.bin ----------------------===//
//
// Encoding follows llama2.c's run.c: a " " dummy prefix before non-empty
// text, one token per UTF-8 codepoint (byte fallback `<0xXX>` when the
// codepoint is not a piece), then repeatedly merge the adjacent pair whose
// concatenation is the piece with the highest score, leftmost on ties.
// run.c rescans every pair per merge (quadratic); a heap of candidate pairs
// picks the same pair each step in O(n log n).
//
// One deliberate difference: merges only produce ordinary pieces, never the
// control pieces (ids 0-2) or byte pieces, as in SentencePiece itself. run.c
// would turn literal text such as "<0x41>" into the byte token if merges
// led there, which would break decode(encode(text)) == text.
//
//===----------------------------------------------------------------------===//

#include "lib/io/FileIO.h"
#include "lib/io/SymbolList.h"
#include "lib/io/Tokenizer.h"

#include <array>
#include <cmath>
#include <cstring>
#include <queue>
#include <unordered_map>

namespace tlm::io {
namespace {

/// "<0xXX>": the spelling of a byte-fallback token.
bool isByteSpelling(std::string_view piece) {
  return piece.size() == 6 && startsWith(piece, "<0x") && endsWith(piece, ">");
}

class LlamaTokenizer final : public Tokenizer {
public:
  static Expected<std::unique_ptr<Tokenizer>> load(const std::string &file);

  std::vector<int64_t> encode(std::string_view text,
                              bool addBos) const override;
  Expected<std::string_view> piece(int64_t prev, int64_t id) const override;
  int64_t vocabSize() const override { return pieces.size(); }
  int64_t bos() const override { return kBos; }
  int64_t eos() const override { return kEos; }

private:
  // llama2.c hard-codes these ids (SentencePiece's defaults).
  static constexpr int32_t kUnk = 0, kBos = 1, kEos = 2;
  enum class Kind : uint8_t { Normal, Control, Byte };

  /// Each piece as stored, which is what merges concatenate.
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<Kind> kinds;
  /// What each id decodes to: a byte piece's byte, nothing for BOS/EOS.
  std::vector<std::string> texts;
  /// Normal pieces to their id: the only results of lookups and merges.
  std::unordered_map<std::string, int32_t> normalIds;
  std::array<int32_t, 256> byteIds;
  int32_t spaceId = -1;

  void mergePairs(std::vector<int32_t> &symbols) const;
};

/// `b` as two upper-case hex digits.
std::string hexByte(int b) {
  const char *digits = "0123456789ABCDEF";
  return {digits[b >> 4], digits[b & 15]};
}

/// The byte of a `<0xXX>` piece, or -1.
int parseBytePiece(std::string_view p) {
  auto digit = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  if (p.size() != 6 || !startsWith(p, "<0x") || p[5] != '>')
    return -1;
  int hi = digit(p[3]), lo = digit(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Expected<std::unique_ptr<Tokenizer>>
LlamaTokenizer::load(const std::string &file) {
  auto fail = [&](const std::string &what) {
    return makeError("tokenizer: " + file + ": " + what);
  };
  // llama2.c's 32000-token vocabulary is under 0.5 MB.
  Expected<std::string> data = readRegularFile(file, 256 << 20);
  if (!data)
    return makeError("tokenizer: " + data.takeError().message());
  std::string_view bytes = *data;

  // The file is read in host byte order, as llama2.c writes and reads it.
  size_t offset = 0;
  auto readInt = [&](int32_t &v) {
    std::memcpy(&v, bytes.data() + offset, 4);
    offset += 4;
  };
  if (bytes.size() < 4)
    return fail("truncated: " + std::to_string(bytes.size()) +
                " bytes, shorter than the int32 max_token_length header");
  int32_t maxLen;
  readInt(maxLen);
  if (maxLen <= 0 || maxLen > (1 << 16))
    return fail("max_token_length is " + std::to_string(maxLen) +
                ", not a plausible piece length (is this a tokenizer.bin?)");

  auto tok = std::make_unique<LlamaTokenizer>();
  while (offset < bytes.size()) {
    size_t id = tok->pieces.size();
    if (bytes.size() - offset < 8)
      return fail("truncated in entry " + std::to_string(id) + " at offset " +
                  std::to_string(offset) +
                  ": no room for its score and length");
    float score;
    std::memcpy(&score, bytes.data() + offset, 4);
    offset += 4;
    int32_t len;
    readInt(len);
    if (std::isnan(score))
      return fail("entry " + std::to_string(id) + " has a NaN score");
    if (len < 0 || len > maxLen)
      return fail("entry " + std::to_string(id) + " claims " +
                  std::to_string(len) +
                  " bytes, outside 0..max_token_length (" +
                  std::to_string(maxLen) + ")");
    if (bytes.size() - offset < static_cast<size_t>(len))
      return fail("truncated in entry " + std::to_string(id) + ": needs " +
                  std::to_string(len) + " bytes at offset " +
                  std::to_string(offset) + ", " +
                  std::to_string(bytes.size() - offset) + " left");
    tok->pieces.push_back(std::string(bytes.substr(offset, len)));
    tok->scores.push_back(score);
    offset += len;
  }

  size_t n = tok->pieces.size();
  if (n <= kEos)
    return fail("has " + std::to_string(n) +
                " entries; expected at least <unk>, BOS and EOS");
  tok->byteIds.fill(-1);
  for (size_t id = 0; id < n; ++id) {
    const std::string &p = tok->pieces[id];
    int byte = parseBytePiece(p);
    if (id == kBos || id == kEos) {
      tok->kinds.push_back(Kind::Control);
      tok->texts.emplace_back();
    } else if (id == kUnk) {
      tok->kinds.push_back(Kind::Control);
      tok->texts.push_back(p);
    } else if (byte >= 0) {
      tok->kinds.push_back(Kind::Byte);
      tok->texts.push_back(std::string(1, static_cast<char>(byte)));
      if (tok->byteIds[byte] < 0)
        tok->byteIds[byte] = id;
    } else {
      tok->kinds.push_back(Kind::Normal);
      tok->texts.push_back(p);
      // A repeated piece keeps its first id, so lookups are deterministic.
      tok->normalIds.try_emplace(p, id);
    }
  }
  for (int b = 0; b < 256; ++b)
    if (tok->byteIds[b] < 0)
      return fail("has no byte-fallback piece <0x" + hexByte(b) +
                  ">, so some text could not be encoded (truncated?)");
  auto space = tok->normalIds.find(" ");
  if (space == tok->normalIds.end())
    return fail("has no \" \" piece for the leading-space dummy prefix "
                "(truncated?)");
  tok->spaceId = space->second;
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

std::vector<int64_t> LlamaTokenizer::encode(std::string_view text,
                                            bool addBos) const {
  std::vector<int64_t> out;
  if (addBos)
    out.push_back(kBos);
  if (text.empty())
    return out;

  // SentencePiece marks word starts with a space, so the first word needs
  // one too: the dummy prefix.
  std::vector<int32_t> symbols{spaceId};
  for (size_t i = 0; i < text.size();) {
    // A codepoint: a byte and up to 3 continuation bytes (as run.c groups
    // them, which also keeps malformed input moving one unit at a time).
    size_t len = 1;
    while (len < 4 && i + len < text.size() &&
           (static_cast<uint8_t>(text[i + len]) & 0xC0) == 0x80)
      ++len;
    auto it = normalIds.find(std::string(text.substr(i, len)));
    if (it != normalIds.end()) {
      symbols.push_back(it->second);
    } else {
      for (size_t k = 0; k < len; ++k)
        symbols.push_back(byteIds[static_cast<uint8_t>(text[i + k])]);
    }
    i += len;
  }
  mergePairs(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  return out;
}

void LlamaTokenizer::mergePairs(std::vector<int32_t> &symbols) const {
  // Symbols form a linked list; a candidate names its left node and the two
  // ids it saw there, so a candidate made stale by another merge is
  // recognised when popped and skipped.
  struct Candidate {
    float score;
    int32_t left, leftId, rightId, merged;
  };
  auto lower = [](const Candidate &a, const Candidate &b) {
    // Highest score first; on ties the leftmost pair, as run.c's scan.
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower)> heap(
      lower);

  SymbolList list(std::move(symbols));
  std::string joined;
  auto consider = [&](int32_t left) {
    if (left < 0 || list.next(left) < 0)
      return;
    int32_t a = list.at(left), b = list.at(list.next(left));
    // A byte-fallback token stands for a raw byte, not for its "<0xXX>"
    // spelling: merging that spelling would break decode(encode(text)).
    if (isByteSpelling(pieces[a]) || isByteSpelling(pieces[b]))
      return;
    joined = pieces[a];
    joined += pieces[b];
    auto it = normalIds.find(joined);
    if (it != normalIds.end())
      heap.push({scores[it->second], left, a, b, it->second});
  };
  list.mergeBestFirst(heap, consider);
  symbols.clear();
  list.appendTo(symbols);
}

Expected<std::string_view> LlamaTokenizer::piece(int64_t prev,
                                                 int64_t id) const {
  if (id < 0 || id >= vocabSize())
    return makeError("token id " + std::to_string(id) +
                     " is outside the vocabulary (0.." +
                     std::to_string(vocabSize() - 1) + ")");
  std::string_view text = texts[id];
  // The piece after BOS carries the dummy prefix's space, which is not part
  // of the text (run.c strips it the same way). Byte pieces are exempt: a
  // <0x20> there is a real space.
  if (prev == kBos && kinds[id] == Kind::Normal && startsWith(text, " "))
    text.remove_prefix(1);
  return text;
}

} // namespace

Expected<std::unique_ptr<Tokenizer>>
loadLlama2cTokenizer(const std::string &file) {
  return LlamaTokenizer::load(file);
}

} // namespace tlm::io
