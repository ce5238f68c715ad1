//===- HfImport.h - Hugging Face Llama-family checkpoints ------*- C++ -*-===//
//
// A Hugging Face folder (config.json, model.safetensors or shards listed in
// model.safetensors.index.json) of the Llama family: the same model as
// ours but for the names and one layout detail. HF's RoPE rotates the two
// halves of each head (rotate_half), ours interleaved pairs, so the rows of
// each head of q_proj and k_proj are permuted: row 2i takes HF's row i and
// row 2i + 1 HF's row i + d_k / 2 (the dot products of q and k are those
// of the same rotated pairs). Everything our model cannot express
// (biases, another activation, RoPE scaling, a sliding window, a head_dim
// other than hidden_size / num_attention_heads, a tensor without a
// counterpart) is an error naming the key; docs/spec/hf-import.md lists
// the mapping.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_MODEL_HFIMPORT_H
#define TLM_MODEL_HFIMPORT_H

#include "lib/model/Config.h"
#include "lib/model/Weights.h"

#include "lib/support/Error.h"

#include <string>

namespace tlm::model {

/// The config of the HF folder `dir` (its config.json), checked.
Expected<Config> readHfConfig(const std::string &dir);

/// Reads the checkpoint in `dir` and writes `outDir`/config.json and
/// `outDir`/weights.safetensors (creating `outDir`). BF16 and F16 matrices
/// stay so when they all share the dtype (else every one becomes F32, an
/// exact widening); the norm gains become F32. `extra` files (the
/// folder's tokenizer.json, when tlm reads it) go beside them, all written
/// as a unit (writeModelFolder); an earlier import's tokenizer.json that
/// this one does not replace is removed.
Expected<Config> importHf(const std::string &dir, const std::string &outDir,
                          const std::vector<ModelFile> &extra = {});

} // namespace tlm::model

#endif // TLM_MODEL_HFIMPORT_H
