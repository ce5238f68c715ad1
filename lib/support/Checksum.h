//===- Checksum.h - a 64-bit checksum of bytes, without LLVM ----*- C++ -*-===//
//
// What an artifact carries after its last byte so the runtime can tell a
// whole file from a truncated or damaged one before dlopen maps it
// (docs/artifacts.md#what-is-in-one): the compiler writes it, the LLVM-free
// runtime checks it, so it lives here. Not cryptographic: it catches
// accidents (a cut copy, a flipped bit), not a forger.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_CHECKSUM_H
#define TLM_SUPPORT_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tlm {

/// A running checksum: bytes fed in any number of pieces give the same
/// value as fed at once.
class Checksum {
public:
  void add(const void *data, size_t size) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < size; ++i) {
      word_ |= uint64_t(p[i]) << (8 * filled_);
      if (++filled_ == 8)
        mix();
    }
  }
  uint64_t value() const {
    Checksum tail = *this;
    if (tail.filled_)
      tail.mix();
    return tail.h_ ^ (tail.count_ * 0x9E3779B97F4A7C15ull);
  }

private:
  void mix() {
    h_ = (h_ ^ word_) * 0xFF51AFD7ED558CCDull;
    h_ ^= h_ >> 29;
    count_ += filled_;
    word_ = 0;
    filled_ = 0;
  }
  uint64_t h_ = 0xCBF29CE484222325ull, word_ = 0, count_ = 0;
  unsigned filled_ = 0;
};

/// The trailer after an artifact's last ELF byte: this magic, then the
/// checksum (little-endian) of every byte before the magic.
inline constexpr char kArtifactTrailerMagic[8] = {'T', 'L', 'M', 'S',
                                                 'U', 'M', '0', '1'};
inline constexpr size_t kArtifactTrailerSize = 16;

} // namespace tlm

#endif // TLM_SUPPORT_CHECKSUM_H
