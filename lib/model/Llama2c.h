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
// major, as ours, so nothing is transposed. The header must pass the same
// checks as a config file (validateConfig).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_MODEL_LLAMA2C_H
#define TLM_MODEL_LLAMA2C_H

#include "lib/model/Config.h"

#include "lib/support/Error.h"

#include <string>

namespace tlm::model {

/// Reads `modelPath` and writes `outDir`/config.json and
/// `outDir`/weights.safetensors (creating `outDir`). Every size is checked
/// against the file length; errors say which array does not fit.
Expected<Config> importLlama2c(const std::string &modelPath,
                               const std::string &outDir);

} // namespace tlm::model

#endif // TLM_MODEL_LLAMA2C_H
