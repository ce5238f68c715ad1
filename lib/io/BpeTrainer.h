//===- BpeTrainer.h - byte-level BPE training --------------------*- C++ -*-===//
//
// Trains a byte-level BPE tokenizer as CS336 §2 defines it: the text split
// on the special tokens first, each part cut into GPT-2's pre-tokens
// (Gpt2PreTokenizer.h), no merge across a pre-token or a special token; the
// initial vocabulary the special tokens and the 256 bytes; at each step the
// most frequent adjacent pair merged, ties broken by the lexicographically
// greater pair (compared as byte strings). The pair counts are updated
// incrementally, from the words a merge touches only.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_BPETRAINER_H
#define TLM_IO_BPETRAINER_H

#include "lib/support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlm::io {

struct BpeTrainingOptions {
  /// The vocabulary to reach: the special tokens, the 256 bytes, then one
  /// token a merge.
  int64_t vocabSize = 0;
  /// Whole tokens, never merged with their neighbours or inside.
  std::vector<std::string> specials;
  /// The text is pre-tokenized this many bytes at a time (or a little
  /// more, up to a place where cutting cannot change the pre-tokens), so
  /// that the splitter's per-character working memory stays small.
  size_t chunkBytes = size_t(1) << 20;
};

/// A trained byte-level BPE: token i's bytes (the special tokens first,
/// then the bytes 0-255, then one token a merge) and the merges in order.
struct BpeVocabulary {
  std::vector<std::string> tokens;
  std::vector<std::pair<int32_t, int32_t>> merges;
  size_t numSpecials = 0;
};

/// What training saw, for the command's summary.
struct BpeStats {
  uint64_t preTokens = 0, distinctPreTokens = 0;
};

/// Trains on `text`. Fewer merges than asked when no adjacent pair is left.
Expected<BpeVocabulary> trainBpe(std::string_view text,
                                 const BpeTrainingOptions &options,
                                 BpeStats *stats = nullptr);

/// `vocab` as a Hugging Face tokenizer.json: a BPE model over GPT-2's byte
/// alphabet (ByteAlphabet.h), GPT-2's pre-tokenizer (ByteLevel with its
/// regex), the special tokens as added tokens.
std::string bpeTokenizerJson(const BpeVocabulary &vocab);

} // namespace tlm::io

#endif // TLM_IO_BPETRAINER_H
