//===- Gpt2Tokenizer.cpp - GPT-2 byte-level BPE ---------------------------===//
//
// vocab.json and merges.txt spell tokens in GPT-2's byte alphabet
// (ByteAlphabet.h); loading translates both back to raw bytes, so encoding
// and decoding work on bytes only.
//
// Encoding cuts the text with GPT-2's pre-tokenisation (Gpt2PreTokenizer.h)
// and applies BPE inside each piece: start from single bytes, and while any
// adjacent pair has a merge, take the pair with the lowest rank and merge
// all its occurrences left to right, exactly as GPT-2's encoder does.
//
//===----------------------------------------------------------------------===//

#include "lib/io/ByteAlphabet.h"
#include "lib/io/FileIO.h"
#include "lib/io/Gpt2PreTokenizer.h"
#include "lib/io/SymbolList.h"
#include "lib/io/Tokenizer.h"

#include "lib/support/Json.h"

#include <array>
#include <unordered_map>

namespace tlm::io {
namespace {

class Gpt2Tokenizer final : public Tokenizer {
public:
  static Expected<std::unique_ptr<Tokenizer>> load(const std::string &dir);

  std::vector<int64_t> encode(std::string_view text,
                              bool addBos) const override;
  Expected<std::string_view> piece(int64_t prev, int64_t id) const override;
  int64_t vocabSize() const override { return tokens.size(); }
  int64_t bos() const override { return -1; }
  int64_t eos() const override { return eosId; }

private:
  struct Merge {
    int32_t rank, merged;
  };
  static uint64_t pairKey(int32_t a, int32_t b) {
    return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
  }

  /// Each id's raw bytes.
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int32_t> ids;
  std::array<int32_t, 256> byteIds;
  std::unordered_map<uint64_t, Merge> merges;
  int32_t eosId = -1;

  void applyMerges(std::string_view piece, std::vector<int64_t> &out) const;
  /// vocab.json's tokens, ids and byte tokens, from its `text`.
  Error readVocab(const std::string &path, const std::string &text,
                  const ByteAlphabet &alphabet);
  /// merges.txt's merges, in rank order, from its `text`.
  Error readMerges(const std::string &path, std::string_view text,
                   const ByteAlphabet &alphabet);
};

/// "tokenizer: FILE: what", the form of the loader's errors.
Error fileError(std::string_view file, const std::string &what) {
  return makeError("tokenizer: " + std::string(file) + ": " + what);
}

Expected<std::unique_ptr<Tokenizer>>
Gpt2Tokenizer::load(const std::string &dir) {
  std::string vocabPath = dir + "/vocab.json";
  std::string mergesPath = dir + "/merges.txt";
  // GPT-2's files are 1 and 0.5 MB; 256 MiB bounds the read of anything
  // else.
  auto readPart = [&](std::string_view path) -> Expected<std::string> {
    Expected<std::string> data = readRegularFile(std::string(path), 256 << 20);
    if (!data)
      return makeError("tokenizer: " + data.takeError().message() +
                       " (a GPT-2 tokenizer folder needs "
                       "vocab.json and merges.txt)");
    return data;
  };
  Expected<std::string> vocabText = readPart(vocabPath);
  if (!vocabText)
    return vocabText.takeError();
  Expected<std::string> mergesText = readPart(mergesPath);
  if (!mergesText)
    return mergesText.takeError();
  ByteAlphabet alphabet;
  auto tok = std::make_unique<Gpt2Tokenizer>();
  if (Error err = tok->readVocab(vocabPath, *vocabText, alphabet))
    return err;
  if (Error err = tok->readMerges(mergesPath, *mergesText, alphabet))
    return err;
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Error Gpt2Tokenizer::readVocab(const std::string &path,
                               const std::string &text,
                               const ByteAlphabet &alphabet) {
  // {"token": id, ...} with ids 0..n-1, each once.
  Expected<json::Value> parsed = json::Value::parse(text);
  if (!parsed)
    return fileError(path,
                     "is not valid JSON: " + parsed.takeError().message());
  const json::Value &vocab = *parsed;
  if (!vocab.isObject() || vocab.size() == 0)
    return fileError(path, "must be a non-empty JSON object of token -> id");
  size_t n = vocab.size();
  tokens.resize(n);
  std::vector<bool> seen(n, false);
  std::string bytes;
  for (size_t item = 0; item < n; ++item) {
    const std::string &spelled = vocab.keys()[item];
    const json::Value &value = vocab.elements()[item];
    if (!value.isUnsigned() || value.asUint() >= n)
      return fileError(path, "token \"" + spelled + "\" has id " +
                                 value.dump() + "; ids must be integers 0.." +
                                 std::to_string(n - 1));
    auto id = static_cast<int32_t>(value.asUint());
    if (seen[id])
      return fileError(path, "id " + std::to_string(id) + " is given twice");
    seen[id] = true;
    if (!alphabet.unspell(spelled, bytes))
      return fileError(path, "token \"" + spelled +
                                 "\" has a character outside GPT-2's byte "
                                 "alphabet");
    tokens[id] = bytes;
    // Several spellings cannot give the same bytes (the alphabet is a
    // bijection), so this map is one-to-one.
    ids.try_emplace(bytes, id);
  }
  byteIds.fill(-1);
  for (int b = 0; b < 256; ++b) {
    auto it = ids.find(std::string(1, char(b)));
    if (it == ids.end())
      return fileError(path, "has no token for byte " + std::to_string(b) +
                                 ", so some text could not be encoded");
    byteIds[b] = it->second;
  }
  if (auto it = ids.find("<|endoftext|>"); it != ids.end())
    eosId = it->second;
  return Error::success();
}

Error Gpt2Tokenizer::readMerges(const std::string &path, std::string_view text,
                                const ByteAlphabet &alphabet) {
  // An optional "#version" line, then "left right" per line in priority
  // order; both halves and their concatenation must be tokens.
  std::string_view rest = text;
  std::string left, right;
  for (int lineNo = 1; !rest.empty(); ++lineNo) {
    std::string_view line;
    std::tie(line, rest) = split(rest, '\n');
    if (endsWith(line, "\r"))
      line.remove_suffix(1);
    if (line.empty() || (lineNo == 1 && startsWith(line, "#version")))
      continue;
    auto bad = [&](const std::string &what) {
      return fileError(path, "line " + std::to_string(lineNo) + ": " + what);
    };
    auto [a, b] = split(line, ' ');
    if (a.empty() || b.empty() || b.find(' ') != std::string_view::npos)
      return bad("expected two tokens separated by one space, got \"" +
                 std::string(line) + "\"");
    if (!alphabet.unspell(a, left) || !alphabet.unspell(b, right))
      return bad("\"" + std::string(line) +
                 "\" has a character outside GPT-2's byte alphabet");
    auto ia = ids.find(left), ib = ids.find(right);
    auto im = ids.find(left + right);
    if (ia == ids.end() || ib == ids.end())
      return bad("\"" + std::string(ia == ids.end() ? a : b) +
                 "\" is not a token in vocab.json");
    if (im == ids.end())
      return bad("the merge of \"" + std::string(a) + "\" and \"" +
                 std::string(b) + "\" is not a token in vocab.json");
    // A repeated merge keeps its first (best) rank.
    merges.try_emplace(pairKey(ia->second, ib->second),
                       Merge{lineNo, im->second});
  }
  return Error::success();
}

std::vector<int64_t> Gpt2Tokenizer::encode(std::string_view text,
                                           bool addBos) const {
  // GPT-2 has no BOS: `addBos` has nothing to add.
  (void)addBos;
  std::vector<int64_t> out;
  for (std::string_view p : splitGpt2(text))
    applyMerges(p, out);
  return out;
}

void Gpt2Tokenizer::applyMerges(std::string_view piece,
                                std::vector<int64_t> &out) const {
  // Symbols form a linked list. The heap holds a candidate for every
  // adjacent pair that has a merge (plus stale ones, skipped when popped:
  // a candidate records the two ids it saw). Each round pops every
  // candidate of the lowest rank, which are all occurrences of one pair,
  // in left-to-right order, and merges those still present.
  RankedMergeHeap heap;

  int32_t n = piece.size();
  std::vector<int32_t> bytes(n);
  for (int32_t i = 0; i < n; ++i)
    bytes[i] = byteIds[static_cast<uint8_t>(piece[i])];
  SymbolList list(std::move(bytes));
  auto consider = [&](int32_t left) {
    if (left < 0 || list.next(left) < 0)
      return;
    int32_t a = list.at(left), b = list.at(list.next(left));
    auto it = merges.find(pairKey(a, b));
    if (it != merges.end())
      heap.push({it->second.rank, left, a, b, it->second.merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i);

  std::vector<int32_t> mergedAt;
  while (!heap.empty()) {
    int32_t rank = heap.top().rank;
    mergedAt.clear();
    // New pairs are only considered after the round, as GPT-2 finishes
    // one pair everywhere before looking for the next best pair.
    while (!heap.empty() && heap.top().rank == rank) {
      RankedMerge c = heap.top();
      heap.pop();
      if (list.merge(c.left, c.leftId, c.rightId, c.merged))
        mergedAt.push_back(c.left);
    }
    for (int32_t at : mergedAt) {
      if (!list.alive(at))
        continue;
      consider(list.prev(at));
      consider(at);
    }
  }
  list.appendTo(out);
}

Expected<std::string_view> Gpt2Tokenizer::piece(int64_t prev,
                                                int64_t id) const {
  (void)prev; // byte-level BPE: a token's bytes never depend on context
  if (id < 0 || id >= vocabSize())
    return makeError("token id " + std::to_string(id) +
                     " is outside the vocabulary (0.." +
                     std::to_string(vocabSize() - 1) + ")");
  return std::string_view(tokens[id]);
}

} // namespace

Expected<std::unique_ptr<Tokenizer>> loadGpt2Tokenizer(const std::string &dir) {
  return Gpt2Tokenizer::load(dir);
}

} // namespace tlm::io
