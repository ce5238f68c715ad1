//===- ByteAlphabet.h - GPT-2's printable spelling of bytes -----*- C++ -*-===//
//
// Byte-level BPE vocabularies (GPT-2's vocab.json, a byte-level
// tokenizer.json) spell every byte as one printable character: printable
// Latin-1 bytes as themselves, the other 68 bytes as U+0100 onwards (space
// is `Ġ`). Both loaders translate their tables back to raw bytes with this,
// so encoding and decoding work on bytes only.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_BYTEALPHABET_H
#define TLM_IO_BYTEALPHABET_H

#include <string>
#include <string_view>
#include <unordered_map>

namespace tlm::io {

class ByteAlphabet {
public:
  ByteAlphabet();

  /// `spelled` (UTF-8 text in the alphabet) as raw bytes in `bytes`; false
  /// when it is not UTF-8 or has a character outside the alphabet.
  bool unspell(std::string_view spelled, std::string &bytes) const;
  /// Raw `bytes` in the alphabet (UTF-8 text), as vocab.json and
  /// tokenizer.json spell tokens.
  std::string spell(std::string_view bytes) const;

private:
  std::unordered_map<uint32_t, char> toByte;
  uint32_t toCodepoint[256];
};

} // namespace tlm::io

#endif // TLM_IO_BYTEALPHABET_H
