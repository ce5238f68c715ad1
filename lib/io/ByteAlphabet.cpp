//===- ByteAlphabet.cpp - GPT-2's printable spelling of bytes -------------===//

#include "lib/io/ByteAlphabet.h"

#include <cstdint>

namespace tlm::io {

ByteAlphabet::ByteAlphabet() {
  uint32_t nextSubstitute = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                     (b >= 0xAE && b <= 0xFF);
    toByte[printable ? b : nextSubstitute++] = static_cast<char>(b);
  }
}

bool ByteAlphabet::unspell(std::string_view spelled, std::string &bytes) const {
  bytes.clear();
  for (size_t i = 0; i < spelled.size();) {
    // The alphabet lies below U+0800: one or two UTF-8 bytes.
    auto c = static_cast<uint8_t>(spelled[i]);
    uint32_t cp;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < spelled.size() &&
               (static_cast<uint8_t>(spelled[i + 1]) & 0xC0) == 0x80) {
      cp = (c & 0x1F) << 6 | (static_cast<uint8_t>(spelled[i + 1]) & 0x3F);
      i += 2;
    } else {
      return false;
    }
    auto it = toByte.find(cp);
    if (it == toByte.end())
      return false;
    bytes += it->second;
  }
  return true;
}

} // namespace tlm::io
