//===- BpeTrainer.cpp - byte-level BPE training ---------------------------===//
//
// The words (distinct pre-tokens, with their counts) are symbol lists. The
// count of every adjacent pair is kept in a map, the words each pair occurs
// in in an append-only index, and the candidates in a max-heap whose stale
// entries (counts that changed since) are skipped when popped. A merge
// rewrites only the words its pair occurs in and applies the difference of
// their pair counts, so a merge costs what it touches, not a recount.
//
//===----------------------------------------------------------------------===//

#include "lib/io/BpeTrainer.h"

#include "lib/io/ByteAlphabet.h"
#include "lib/io/Gpt2PreTokenizer.h"
#include "lib/support/Json.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <unordered_map>

namespace tlm::io {

namespace {

using PairKey = uint64_t;

PairKey pairKey(int32_t a, int32_t b) {
  return uint64_t(uint32_t(a)) << 32 | uint32_t(b);
}
int32_t first(PairKey k) { return int32_t(k >> 32); }
int32_t second(PairKey k) { return int32_t(k & 0xFFFFFFFFu); }

struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

/// Calls `piece` on each part of `text` between the special tokens (the
/// earliest match first, the longest of those that start there).
template <typename F>
void forEachOrdinaryPart(std::string_view text,
                         const std::vector<std::string> &specials, F piece) {
  // Each special's next match, searched again only once the text has gone
  // past it: a rare special is not rescanned to the end at every part.
  std::vector<size_t> nextOf(specials.size(), 0);
  std::vector<bool> searched(specials.size(), false);
  size_t at = 0;
  while (at < text.size()) {
    size_t next = std::string_view::npos, length = 0;
    for (size_t i = 0; i < specials.size(); ++i) {
      if (!searched[i] || (nextOf[i] != std::string_view::npos &&
                           nextOf[i] < at)) {
        nextOf[i] = text.find(specials[i], at);
        searched[i] = true;
      }
      size_t found = nextOf[i];
      if (found < next || (found == next && specials[i].size() > length)) {
        next = found;
        length = specials[i].size();
      }
    }
    if (next == std::string_view::npos) {
      piece(text.substr(at));
      return;
    }
    if (next > at)
      piece(text.substr(at, next - at));
    at = next + length;
  }
}

bool asciiNonSpace(char c) { return c > ' ' && c < 0x7F; }

/// Calls `chunk` on consecutive pieces of `part` of about `bytes` each, cut
/// only at "X<newline>Y" with X and Y printable ASCII, after the newline:
/// there GPT-2's pre-tokens are the same whether the text is cut or not
/// (the newline is a one-character whitespace run, a piece of its own
/// either way, and Y starts a piece). A part with no such place stays whole.
template <typename F>
void forEachSafeChunk(std::string_view part, size_t bytes, F chunk) {
  size_t at = 0;
  while (part.size() - at > bytes) {
    size_t cut = std::string_view::npos;
    for (size_t p = part.find('\n', at + bytes); p != std::string_view::npos;
         p = part.find('\n', p + 1))
      if (p > at && p + 1 < part.size() && asciiNonSpace(part[p - 1]) &&
          asciiNonSpace(part[p + 1])) {
        cut = p + 1;
        break;
      }
    if (cut == std::string_view::npos)
      break;
    chunk(part.substr(at, cut - at));
    at = cut;
  }
  chunk(part.substr(at));
}

class Trainer {
public:
  Trainer(std::vector<Word> words, BpeVocabulary &vocab)
      : words(std::move(words)), vocab(vocab),
        lastMerge(this->words.size(), -1) {}

  void run(int64_t vocabSize) {
    for (int32_t w = 0; w < int32_t(words.size()); ++w)
      for (size_t i = 0; i + 1 < words[w].symbols.size(); ++i) {
        PairKey k = pairKey(words[w].symbols[i], words[w].symbols[i + 1]);
        counts[k] += words[w].count;
        wordsWith[k].push_back(w);
      }
    for (const auto &[k, c] : counts)
      heap.push({c, k});
    while (int64_t(vocab.tokens.size()) < vocabSize) {
      std::optional<PairKey> best = popBest();
      if (!best)
        break; // every word is one token
      merge(*best);
    }
  }

private:
  struct Candidate {
    int64_t count;
    PairKey pair;
  };
  /// Orders candidates for the max-heap: by count, then by the pair's
  /// bytes (CS336's tie-break: the lexicographically greater pair), then by
  /// ids, so that equal byte strings still order the same way every run.
  struct Lower {
    const BpeVocabulary *vocab;
    bool operator()(const Candidate &x, const Candidate &y) const {
      if (x.count != y.count)
        return x.count < y.count;
      const std::vector<std::string> &t = vocab->tokens;
      if (int c = t[first(x.pair)].compare(t[first(y.pair)]))
        return c < 0;
      if (int c = t[second(x.pair)].compare(t[second(y.pair)]))
        return c < 0;
      return x.pair < y.pair;
    }
  };

  std::optional<PairKey> popBest() {
    while (!heap.empty()) {
      Candidate top = heap.top();
      heap.pop();
      auto it = counts.find(top.pair);
      if (it != counts.end() && it->second == top.count && top.count > 0)
        return top.pair;
    }
    return std::nullopt;
  }

  /// Replaces every occurrence of `pair`, left to right, by a new token.
  void merge(PairKey pair) {
    int32_t a = first(pair), b = second(pair);
    int32_t merged = int32_t(vocab.tokens.size());
    vocab.tokens.push_back(vocab.tokens[a] + vocab.tokens[b]);
    vocab.merges.push_back({a, b});
    int32_t step = int32_t(vocab.merges.size());
    std::unordered_map<PairKey, int64_t> delta;
    std::vector<int32_t> touched = std::move(wordsWith[pair]);
    wordsWith.erase(pair);
    for (int32_t w : touched) {
      if (lastMerge[w] == step)
        continue; // listed twice
      lastMerge[w] = step;
      Word &word = words[w];
      std::vector<int32_t> &s = word.symbols;
      std::vector<int32_t> out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      if (out.size() == s.size())
        continue; // an index entry the word outgrew
      for (size_t i = 0; i + 1 < s.size(); ++i)
        delta[pairKey(s[i], s[i + 1])] -= word.count;
      for (size_t i = 0; i + 1 < out.size(); ++i) {
        PairKey k = pairKey(out[i], out[i + 1]);
        delta[k] += word.count;
        if (out[i] == merged || out[i + 1] == merged)
          wordsWith[k].push_back(w);
      }
      s = std::move(out);
    }
    for (const auto &[k, d] : delta) {
      if (d == 0)
        continue;
      int64_t &c = counts[k];
      c += d;
      if (c > 0)
        heap.push({c, k});
    }
    counts.erase(pair);
  }

  std::vector<Word> words;
  BpeVocabulary &vocab;
  std::vector<int32_t> lastMerge;
  std::unordered_map<PairKey, int64_t> counts;
  std::unordered_map<PairKey, std::vector<int32_t>> wordsWith;
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> heap{
      Lower{&vocab}};
};

} // namespace

Expected<BpeVocabulary> trainBpe(std::string_view text,
                                 const BpeTrainingOptions &options,
                                 BpeStats *stats) {
  int64_t base = 256 + int64_t(options.specials.size());
  if (options.vocabSize < base)
    return makeError("the vocabulary size must hold the 256 bytes and the " +
                     std::to_string(options.specials.size()) +
                     " special tokens (at least " + std::to_string(base) +
                     "), found " + std::to_string(options.vocabSize));
  if (options.vocabSize > INT32_MAX)
    return makeError("the vocabulary size must be at most " +
                     std::to_string(INT32_MAX) + ", found " +
                     std::to_string(options.vocabSize));
  for (size_t i = 0; i < options.specials.size(); ++i) {
    if (options.specials[i].empty())
      return makeError("a special token must not be empty");
    for (size_t j = 0; j < i; ++j)
      if (options.specials[i] == options.specials[j])
        return makeError("special token '" + options.specials[i] +
                         "' is given twice");
  }

  BpeVocabulary vocab;
  vocab.numSpecials = options.specials.size();
  vocab.tokens = options.specials;
  for (int b = 0; b < 256; ++b)
    vocab.tokens.push_back(std::string(1, char(b)));

  // Distinct pre-tokens in order of first appearance (a deterministic word
  // order), with their counts.
  std::unordered_map<std::string_view, int32_t> index;
  std::vector<Word> words;
  uint64_t preTokens = 0;
  auto count = [&](std::string_view chunk) {
    for (std::string_view piece : splitGpt2(chunk)) {
      ++preTokens;
      auto [it, added] = index.try_emplace(piece, int32_t(words.size()));
      if (added) {
        Word w{{}, 0};
        for (char c : piece)
          w.symbols.push_back(int32_t(vocab.numSpecials) + uint8_t(c));
        words.push_back(std::move(w));
      }
      ++words[it->second].count;
    }
  };
  forEachOrdinaryPart(text, options.specials, [&](std::string_view part) {
    forEachSafeChunk(part, std::max<size_t>(options.chunkBytes, 1), count);
  });
  if (stats)
    *stats = {preTokens, uint64_t(words.size())};
  Trainer(std::move(words), vocab).run(options.vocabSize);
  return vocab;
}

std::string bpeTokenizerJson(const BpeVocabulary &vocab) {
  ByteAlphabet alphabet;
  auto spelled = [&](int32_t id) {
    // Special tokens are matched as they are written, not through the
    // byte alphabet.
    return size_t(id) < vocab.numSpecials ? vocab.tokens[id]
                                          : alphabet.spell(vocab.tokens[id]);
  };
  json::Value added = json::Value::array();
  for (size_t id = 0; id < vocab.numSpecials; ++id) {
    json::Value t = json::Value::object();
    t.set("id", int64_t(id));
    t.set("content", vocab.tokens[id]);
    t.set("single_word", false);
    t.set("lstrip", false);
    t.set("rstrip", false);
    t.set("normalized", false);
    t.set("special", true);
    added.push(std::move(t));
  }
  auto byteLevel = [] {
    json::Value v = json::Value::object();
    v.set("type", "ByteLevel");
    v.set("add_prefix_space", false);
    v.set("trim_offsets", true);
    v.set("use_regex", true);
    return v;
  };
  // The special tokens are in the model's vocabulary too, as Hugging
  // Face's trainers write them: its library gives an added token the id its
  // text has there, and one missing from it the next id after the
  // vocabulary, whatever the file says. A special whose text is also a
  // byte's or a merge's spelling stays an added token only (one key, one
  // id).
  json::Value vocabulary = json::Value::object();
  for (size_t id = vocab.numSpecials; id < vocab.tokens.size(); ++id)
    vocabulary.set(spelled(int32_t(id)), int64_t(id));
  for (size_t id = 0; id < vocab.numSpecials; ++id)
    if (!vocabulary.find(vocab.tokens[id]))
      vocabulary.set(vocab.tokens[id], int64_t(id));
  json::Value merges = json::Value::array();
  for (auto [a, b] : vocab.merges) {
    json::Value pair = json::Value::array();
    pair.push(spelled(a));
    pair.push(spelled(b));
    merges.push(std::move(pair));
  }
  json::Value model = json::Value::object();
  model.set("type", "BPE");
  model.set("dropout", nullptr);
  model.set("unk_token", nullptr);
  model.set("continuing_subword_prefix", nullptr);
  model.set("end_of_word_suffix", nullptr);
  model.set("fuse_unk", false);
  model.set("byte_fallback", false);
  model.set("ignore_merges", false);
  model.set("vocab", std::move(vocabulary));
  model.set("merges", std::move(merges));

  json::Value root = json::Value::object();
  root.set("version", "1.0");
  root.set("truncation", nullptr);
  root.set("padding", nullptr);
  root.set("added_tokens", std::move(added));
  root.set("normalizer", nullptr);
  root.set("pre_tokenizer", byteLevel());
  root.set("post_processor", nullptr);
  root.set("decoder", byteLevel());
  root.set("model", std::move(model));
  return root.dump() + "\n";
}

} // namespace tlm::io
