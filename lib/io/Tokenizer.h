//===- Tokenizer.h - text <-> token ids -------------------------*- C++ -*-===//
//
// Three vocabularies, one interface:
//  - llama2.c's tokenizer.bin (a SentencePiece vocabulary exported with its
//    scores), encoded the way llama2.c's run.c does: greedy merges by score.
//  - GPT-2 byte-level BPE from a folder with vocab.json + merges.txt: merges
//    applied by rank inside each piece of GPT-2's pre-tokenisation.
//  - Hugging Face tokenizer.json, byte-level or SentencePiece-style BPE,
//    encoded as the `tokenizers` library does (HfTokenizer.cpp).
// Loading validates the whole file up front, so encode/decode never meet a
// malformed table; every load error names the file and what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_TOKENIZER_H
#define TLM_IO_TOKENIZER_H

#include "lib/support/Error.h"
#include "lib/support/Strings.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tlm::io {

class Tokenizer {
public:
  virtual ~Tokenizer();

  /// `path` is `bytes` (the built-in byte tokenizer: id = byte, 256 ids,
  /// no BOS or end of text), a llama2.c tokenizer.bin file, a Hugging Face
  /// tokenizer.json (any file whose name ends in `.json`), or a folder with
  /// GPT-2-style vocab.json + merges.txt or with a tokenizer.json. Errors
  /// name the file and what is wrong (truncated file, bad JSON, a merge
  /// naming an unknown token, a tokenizer.json feature not supported, ...).
  static Expected<std::unique_ptr<Tokenizer>> load(const std::string &path);

  /// The ids of `text`, any bytes (invalid UTF-8 goes through byte
  /// fallback), with BOS first when `addBos` and the vocabulary has one.
  /// decode(encode(text, true)) == text. For llama2.c only the piece after
  /// BOS drops the dummy-prefix space, so without BOS it decodes as
  /// " " + text (non-empty text), as in llama2.c.
  virtual std::vector<int64_t> encode(std::string_view text,
                                      bool addBos) const = 0;

  /// The exact text of `ids` (no added newline); invalid ids are an error.
  /// The concatenation of piece() over `ids`.
  virtual Expected<std::string> decode(Span<int64_t> ids) const;

  /// The bytes that `id` contributes when it follows `prev` (-1: `id` starts
  /// the sequence). The context matters for llama2.c, where the piece after
  /// BOS loses its leading space. The bytes live as long as the tokenizer;
  /// they may end inside a UTF-8 sequence that later pieces complete.
  virtual Expected<std::string_view> piece(int64_t prev, int64_t id) const = 0;

  virtual int64_t vocabSize() const = 0;
  /// BOS id if the vocabulary has one (llama2.c: 1), else -1.
  virtual int64_t bos() const = 0;
  /// End-of-text id if the vocabulary has one (llama2.c: 2, GPT-2:
  /// `<|endoftext|>`), else -1: generation stops there.
  virtual int64_t eos() const = 0;

  /// Whether encode() cuts the vocabulary's added tokens (`<|endoftext|>`,
  /// `<s>`, chat markers) out of the text as single ids; off by default, so
  /// text that merely spells one is encoded as text. Returns false when the
  /// vocabulary has no such tokens to recognise (only tokenizer.json has).
  virtual bool setParseSpecial(bool on) { return !on; }
};

/// The built-in byte tokenizer: each byte its own id (the byte-level models
/// of docs/training.md train on it).
std::unique_ptr<Tokenizer> makeByteTokenizer();

/// llama2.c's tokenizer.bin: int32 max_token_length, then per entry float32
/// score, int32 length and the bytes.
Expected<std::unique_ptr<Tokenizer>>
loadLlama2cTokenizer(const std::string &file);

/// GPT-2 byte-level BPE from `dir`/vocab.json and `dir`/merges.txt.
Expected<std::unique_ptr<Tokenizer>> loadGpt2Tokenizer(const std::string &dir);

/// A Hugging Face tokenizer.json with a BPE model, byte-level (GPT-2,
/// Llama 3, SmolLM) or SentencePiece-style with byte fallback (Llama 2,
/// TinyLlama); anything else in it is refused by name (HfTokenizerLoad.cpp).
Expected<std::unique_ptr<Tokenizer>> loadHfTokenizer(const std::string &file);

/// Streams text while ids arrive: feed() returns the newly complete UTF-8
/// text, holding back the bytes of a multi-byte sequence that is not complete
/// yet; finish() returns whatever is held back (raw, possibly invalid UTF-8),
/// so the concatenation of all outputs equals Tokenizer::decode of the ids.
class StreamDecoder {
public:
  /// `prev` is the id before the first one fed (e.g. the last prompt id when
  /// only generated ids are fed); -1 when the stream starts the sequence.
  explicit StreamDecoder(const Tokenizer &t, int64_t prev = -1);

  /// An invalid id is an error and leaves the stream unchanged.
  Expected<std::string> feed(int64_t id);
  std::string finish();

private:
  const Tokenizer &tokenizer;
  int64_t prev;
  std::string pending;
};

/// The length of the longest prefix of `bytes` that does not end inside a
/// UTF-8 multi-byte sequence which more bytes could still complete.
size_t completeUtf8Prefix(std::string_view bytes);

} // namespace tlm::io

#endif // TLM_IO_TOKENIZER_H
