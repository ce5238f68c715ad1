//===- TokenFile.h - token id files (--tokens-file) -------------*- C++ -*-===//
#ifndef TLM_IO_TOKENFILE_H
#define TLM_IO_TOKENFILE_H

#include "lib/support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tlm::io {

/// A (batch, seq) matrix of token ids, row-major.
struct TokenMatrix {
  std::vector<int64_t> ids;
  int64_t batch = 0, seq = 0;
};

/// Reads the integer `tokens` tensor (I64 or I32, shape (batch, seq), both
/// at least 1) of a safetensors file, or its only integer tensor when none
/// is called `tokens`. Errors name the file and what is wrong; the ids are
/// not range-checked here (that needs the model's vocab_size).
Expected<TokenMatrix> readTokenFile(const std::string &path);

/// A token file read as one flat stream, a window at a time: a raw file of
/// little-endian `uint16`, `int32` or `int64` ids (CS336's `np.memmap`
/// layout), an llm.c shard (a 256 x int32 header: magic 20240520, version
/// 1, the token count; then uint16 ids), or a safetensors token file (rank
/// 1, or rank 2 with its rows one after another; its header read at open). Either way each window is
/// read from the file when asked for, never the whole stream.
class TokenStream {
public:
  /// `dtype` "uint16", "int32" or "int64" for a raw file, "llmc" for an
  /// llm.c shard, "" for safetensors or an llm.c shard (told apart by the
  /// shard's magic).
  static Expected<TokenStream> open(const std::string &path,
                                    const std::string &dtype);
  TokenStream(TokenStream &&other) noexcept;
  ~TokenStream();

  int64_t size() const { return size_; }
  /// Ids [begin, begin + count) of the stream.
  Expected<std::vector<int64_t>> read(int64_t begin, int64_t count) const;

private:
  TokenStream() = default;
  std::string path_;
  int fd_ = -1;
  size_t elementBytes_ = 0;
  int64_t size_ = 0;
  /// Where the ids start in the file (a safetensors file's data offset).
  uint64_t offset_ = 0;
};

} // namespace tlm::io

#endif // TLM_IO_TOKENFILE_H
