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

} // namespace tlm::io

#endif // TLM_IO_TOKENFILE_H
