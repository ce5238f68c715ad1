//===- HfTokenizer.h - tokenizer.json's pipeline, inside ------*- C++ -*-===//
//
// The `tokenizers` library's file describes a pipeline: added tokens cut out
// of the text first, then a normalizer, pre-tokenizers that split the text
// into pieces, a BPE model applied inside each piece, a post-processor that
// adds BOS, and a decoder. Two families of it are in use and read here:
//
//  - byte-level BPE (GPT-2, Llama 3, SmolLM): a ByteLevel pre-tokenizer,
//    vocab and merges spelled in GPT-2's byte alphabet (ByteAlphabet.h),
//    split by GPT-2's or Llama 3's pattern and optionally by digits;
//  - SentencePiece-style BPE (Llama 2, TinyLlama): spaces become `▁`, one
//    `▁` is prepended (a Prepend normalizer or a Metaspace pre-tokenizer),
//    symbols start as characters, and characters outside the vocabulary
//    fall back to `<0xXX>` byte tokens.
//
// Merges apply as in `tokenizers`: the pair of lowest rank first, leftmost
// on ties, one merge at a time. Every field whose value would change the
// result and which is not implemented here is refused by name at load,
// so a file is either encoded as `tokenizers` encodes it or not at all.
//
// This header is the loader's (HfTokenizerLoad.cpp) and the encoder's
// (HfTokenizer.cpp) shared view of one tokenizer; users go through
// io::loadHfTokenizer (Tokenizer.h).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_HFTOKENIZER_H
#define TLM_IO_HFTOKENIZER_H

#include "lib/io/Tokenizer.h"

#include "lib/support/Json.h"

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

namespace tlm::io::hf {

inline constexpr std::string_view kMetaspace = "\xE2\x96\x81"; // U+2581 `▁`

// The two split patterns known here, as tokenizer.json spells them.
inline constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/// One step of the pre-tokenization, applied to every piece in turn.
struct PreStep {
  enum Kind { Gpt2Split, Llama3Split, Digits, ByteLevel, Metaspace } kind;
  bool flag = false; // Digits: individual; ByteLevel: add a prefix space;
                     // Metaspace: split at each `▁`
  bool regex = false;    // ByteLevel: GPT-2's split too
  int prepend = 0;       // Metaspace: 0 never, 1 first piece, 2 always
};

/// `text` with every `from` replaced by `to`.
std::string replaceAll(std::string_view text, std::string_view from,
                       std::string_view to);

class HfTokenizer final : public Tokenizer {
public:
  static Expected<std::unique_ptr<Tokenizer>> load(const std::string &file);

  std::vector<int64_t> encode(std::string_view text,
                              bool addBos) const override;
  Expected<std::string_view> piece(int64_t prev, int64_t id) const override;
  int64_t vocabSize() const override { return texts.size(); }
  int64_t bos() const override { return bosId; }
  int64_t eos() const override { return eosId; }
  bool setParseSpecial(bool on) override {
    parseSpecial = on;
    return true;
  }

private:
  enum class Kind : uint8_t { Normal, Byte, Special, Added };
  struct Merge {
    int32_t rank, merged;
  };
  static uint64_t pairKey(int32_t a, int32_t b) {
    return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
  }

  // Loading (HfTokenizerLoad.cpp): `where` starts each error message.
  /// Everything but the added tokens and the post-processor.
  Error readPipeline(const json::Value &root, const std::string &file);
  /// The normalizer: none, or SentencePiece's Prepend and Replace.
  Error readNormalizer(const json::Value &root, const std::string &where);
  /// One normalizer, if it is one of those (else false).
  bool readNormalizerStep(const json::Value &p);
  /// The pre-tokenizer's steps, and so whether the model is byte-level.
  Error readPreTokenization(const json::Value &root, const std::string &where);
  /// The decoder, which must undo what the encoder did and nothing else.
  Error readDecoder(const json::Value &root, const std::string &where);
  /// One decoder step, if it is supported with this model (else false).
  bool readDecoderStep(const json::Value &p);
  /// The BPE model; every id lies below `idLimit`.
  Error readModel(const json::Value &model, const std::string &file,
                  size_t idLimit);
  /// The vocab into ids, texts and kinds.
  Error readVocab(const json::Value &model, const std::string &where,
                  size_t idLimit);
  /// Grows texts and kinds to hold `id`, new ids Special until claimed.
  void makeRoomFor(int32_t id);
  /// byteIds: the byte-level alphabet's tokens, or byte_fallback's.
  Error findByteTokens(const std::string &where, bool byteFallback);
  /// unkId, needed unless every byte has a token.
  Error readUnkToken(const json::Value &model, const std::string &where,
                     bool byteFallback);
  /// The merges, ranked in file order.
  Error readMerges(const json::Value &model, const std::string &where);
  /// added_tokens, whose text overrides the model's.
  Error readAddedTokens(const json::Value &root, const std::string &where);
  /// One added token; `count` is the number of them.
  Error readAddedToken(const json::Value &t, size_t count,
                       const std::string &where);
  /// Every id has a token, and only added ones lie outside the alphabet.
  Error checkIds(const std::string &where) const;
  /// Sorts `added` longest first and fills addedByFirstByte.
  void indexAddedTokens();
  /// The added token spelled `content`'s id, or -1.
  int32_t addedId(std::string_view content) const;
  /// The post-processor, which gives bosId.
  Error readPostProcessor(const json::Value &root, const std::string &where);
  /// One TemplateProcessing: a leading special token (BOS) at most.
  Error readTemplate(const json::Value &p, const std::string &where);
  /// eosId, by the names the families' base models give it.
  void pickEos();

  void encodeSegment(std::string_view text, bool first,
                     std::vector<int64_t> &out) const;
  void encodePiece(std::string_view piece, std::vector<int64_t> &out) const;

  bool byteLevel = false;
  /// Each id's text when decoded.
  std::vector<std::string> texts;
  std::vector<Kind> kinds;
  /// The model's tokens (raw bytes in byte-level mode, the stored string
  /// with `▁` otherwise) to their ids.
  std::unordered_map<std::string, int32_t> ids;
  /// The vocab's entries, and the largest added token id so far: an added
  /// token new to both takes the next id (readAddedToken).
  size_t vocabEntries = 0;
  int32_t lastAddedId = -1;
  std::unordered_map<uint64_t, Merge> merges;
  /// Byte-level: each byte's token. SentencePiece: its `<0xXX>` token when
  /// byte_fallback is on, else -1.
  std::array<int32_t, 256> byteIds;
  int32_t unkId = -1;
  bool fuseUnk = false, ignoreMerges = false;

  /// Normalizer: a prefix added to non-empty text; spaces replaced by `▁`.
  std::string normalPrefix;
  bool spacesToMetaspace = false;
  std::vector<PreStep> steps;
  /// The decoder drops the space that starts the first piece (only a
  /// vocab token's, or a byte token's too).
  bool stripFirstSpace = false, stripByteSpace = false;

  /// Added tokens, longest first, matched in text when parseSpecial; the
  /// indices of those that start with each byte, so a position tries only
  /// those.
  std::vector<std::pair<std::string, int32_t>> added;
  std::array<std::vector<uint32_t>, 256> addedByFirstByte;
  bool parseSpecial = false;
  int32_t bosId = -1, eosId = -1;
};


} // namespace tlm::io::hf

#endif // TLM_IO_HFTOKENIZER_H
