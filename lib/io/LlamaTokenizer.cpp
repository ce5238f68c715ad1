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

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <array>
#include <cmath>
#include <cstring>
#include <queue>

namespace tlm::io {
namespace {

/// "<0xXX>": the spelling of a byte-fallback token.
bool isByteSpelling(llvm::StringRef piece) {
  return piece.size() == 6 && piece.starts_with("<0x") && piece.ends_with(">");
}

class LlamaTokenizer final : public Tokenizer {
public:
  static llvm::Expected<std::unique_ptr<Tokenizer>>
  load(const std::string &file);

  std::vector<int64_t> encode(llvm::StringRef text, bool addBos) const override;
  llvm::Expected<llvm::StringRef> piece(int64_t prev,
                                        int64_t id) const override;
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
  llvm::StringMap<int32_t> normalIds;
  std::array<int32_t, 256> byteIds;
  int32_t spaceId = -1;

  void mergePairs(std::vector<int32_t> &symbols) const;
};

/// The byte of a `<0xXX>` piece, or -1.
int parseBytePiece(llvm::StringRef p) {
  unsigned value;
  if (p.size() != 6 || !p.starts_with("<0x") || !p.ends_with(">") ||
      p.substr(3, 2).getAsInteger(16, value))
    return -1;
  return static_cast<int>(value);
}

llvm::Expected<std::unique_ptr<Tokenizer>>
LlamaTokenizer::load(const std::string &file) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError("tokenizer: " + file + ": " + what.str());
  };
  // llama2.c's 32000-token vocabulary is under 0.5 MB.
  llvm::Expected<std::string> data = readRegularFile(file, 256 << 20);
  if (!data)
    return llvm::createStringError("tokenizer: " +
                                   llvm::toString(data.takeError()));
  llvm::StringRef bytes = *data;

  // The file is read in host byte order, as llama2.c writes and reads it.
  size_t offset = 0;
  auto readInt = [&](int32_t &v) {
    std::memcpy(&v, bytes.data() + offset, 4);
    offset += 4;
  };
  if (bytes.size() < 4)
    return fail("truncated: " + llvm::Twine(bytes.size()) +
                " bytes, shorter than the int32 max_token_length header");
  int32_t maxLen;
  readInt(maxLen);
  if (maxLen <= 0 || maxLen > (1 << 16))
    return fail("max_token_length is " + llvm::Twine(maxLen) +
                ", not a plausible piece length (is this a tokenizer.bin?)");

  auto tok = std::make_unique<LlamaTokenizer>();
  while (offset < bytes.size()) {
    size_t id = tok->pieces.size();
    if (bytes.size() - offset < 8)
      return fail("truncated in entry " + llvm::Twine(id) + " at offset " +
                  llvm::Twine(offset) + ": no room for its score and length");
    float score;
    std::memcpy(&score, bytes.data() + offset, 4);
    offset += 4;
    int32_t len;
    readInt(len);
    if (std::isnan(score))
      return fail("entry " + llvm::Twine(id) + " has a NaN score");
    if (len < 0 || len > maxLen)
      return fail("entry " + llvm::Twine(id) + " claims " + llvm::Twine(len) +
                  " bytes, outside 0..max_token_length (" +
                  llvm::Twine(maxLen) + ")");
    if (bytes.size() - offset < static_cast<size_t>(len))
      return fail("truncated in entry " + llvm::Twine(id) + ": needs " +
                  llvm::Twine(len) + " bytes at offset " + llvm::Twine(offset) +
                  ", " + llvm::Twine(bytes.size() - offset) + " left");
    tok->pieces.push_back(bytes.substr(offset, len).str());
    tok->scores.push_back(score);
    offset += len;
  }

  size_t n = tok->pieces.size();
  if (n <= kEos)
    return fail("has " + llvm::Twine(n) +
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
      return fail("has no byte-fallback piece <0x" +
                  llvm::utohexstr(b, /*LowerCase=*/false, /*Width=*/2) +
                  ">, so some text could not be encoded (truncated?)");
  auto space = tok->normalIds.find(" ");
  if (space == tok->normalIds.end())
    return fail("has no \" \" piece for the leading-space dummy prefix "
                "(truncated?)");
  tok->spaceId = space->second;
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

std::vector<int64_t> LlamaTokenizer::encode(llvm::StringRef text,
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
    auto it = normalIds.find(text.substr(i, len));
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

  int32_t n = symbols.size();
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
  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i);

  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    if (!list.merge(c.left, c.leftId, c.rightId, c.merged))
      continue;
    consider(list.prev(c.left));
    consider(c.left);
  }
  symbols.clear();
  list.appendTo(symbols);
}

llvm::Expected<llvm::StringRef> LlamaTokenizer::piece(int64_t prev,
                                                      int64_t id) const {
  if (id < 0 || id >= vocabSize())
    return llvm::createStringError("token id " + std::to_string(id) +
                                   " is outside the vocabulary (0.." +
                                   std::to_string(vocabSize() - 1) + ")");
  llvm::StringRef text = texts[id];
  // The piece after BOS carries the dummy prefix's space, which is not part
  // of the text (run.c strips it the same way). Byte pieces are exempt: a
  // <0x20> there is a real space.
  if (prev == kBos && kinds[id] == Kind::Normal && text.starts_with(" "))
    text = text.drop_front();
  return text;
}

} // namespace

llvm::Expected<std::unique_ptr<Tokenizer>>
loadLlama2cTokenizer(const std::string &file) {
  return LlamaTokenizer::load(file);
}

} // namespace tlm::io
