//===- ByteAlphabet.cpp - GPT-2's printable spelling of bytes -------------===//

#include "lib/io/ByteAlphabet.h"

#include <cstdint>

namespace tlm::io {

ByteAlphabet::ByteAlphabet() {
  uint32_t nextSubstitute = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                     (b >= 0xAE && b <= 0xFF);
    uint32_t cp = printable ? b : nextSubstitute++;
    toByte[cp] = static_cast<char>(b);
    toCodepoint[b] = cp;
  }
}

std::string ByteAlphabet::spell(std::string_view bytes) const {
  std::string spelled;
  spelled.reserve(bytes.size() * 2);
  for (char c : bytes) {
    uint32_t cp = toCodepoint[static_cast<uint8_t>(c)];
    if (cp < 0x80) {
      spelled += static_cast<char>(cp);
    } else { // below U+0800: two UTF-8 bytes
      spelled += static_cast<char>(0xC0 | cp >> 6);
      spelled += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return spelled;
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
