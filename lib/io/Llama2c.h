//===- Llama2c.h - import llama2.c checkpoints ------------------*- C++ -*-===//
//
// llama2.c's legacy format: 7 int32 (dim, hidden_dim, n_layers, n_heads,
// n_kv_heads, vocab_size, seq_len; a negative vocab_size means the
// classifier is stored at the end instead of shared with the embedding),
// then float32 arrays: token embedding (vocab, dim), attention RMSNorm
// (layers, dim), wq (layers, dim, dim), wk and wv (layers, kv_dim, dim), wo
// (layers, dim, dim), FFN RMSNorm (layers, dim), w1 (layers, hidden, dim),
// w2 (layers, dim, hidden), w3 (layers, hidden, dim), final RMSNorm (dim),
// two legacy RoPE tables of seq_len·head_size/2 floats each (skipped), and
// the classifier (vocab, dim) when not shared. Matrices are (out, in) row
// major, as ours, so nothing is transposed.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_LLAMA2C_H
#define TLM_IO_LLAMA2C_H

#include "lib/model/Config.h"

#include "llvm/Support/Error.h"

#include <string>

namespace tlm::io {

/// Reads `modelPath` and writes `outDir`/config.json and
/// `outDir`/weights.safetensors (creating `outDir`). Every size is checked
/// against the file length; errors say which array does not fit.
llvm::Expected<model::Config> importLlama2c(const std::string &modelPath,
                                            const std::string &outDir);

/// The JSON text of `config` (the schema of docs/spec/config.md#config).
std::string configToJson(const model::Config &config);

} // namespace tlm::io

#endif // TLM_IO_LLAMA2C_H
