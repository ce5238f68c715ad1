//===- Llama2c.cpp - import llama2.c checkpoints --------------------------===//

#include "lib/model/Llama2c.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"


#include <cstring>
#include <sstream>

namespace tlm::model {

Expected<Config> importLlama2c(const std::string &modelPath,
                               const std::string &outDir) {
  auto fail = [&](const std::string &what) {
    return makeError("llama2.c import: " + modelPath + ": " + what);
  };
  // llama2.c's largest models are a few GB; 64 GiB bounds the read of
  // anything else.
  Expected<std::string> buffer = io::readRegularFile(modelPath, 1ull << 36);
  if (!buffer)
    return makeError("llama2.c import: " + buffer.takeError().message());
  std::string_view bytes = *buffer;
  if (bytes.size() < 28)
    return fail("file is " + std::to_string(bytes.size()) +
                " bytes, shorter than the 28-byte header");
  int32_t h[7];
  std::memcpy(h, bytes.data(), sizeof(h));
  const char *names[] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                         "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i)
    if (h[i] == 0 || (i != 5 && h[i] < 0) || std::abs(h[i]) > (1 << 24))
      return fail(std::string("header field ") + names[i] + " is " +
                  std::to_string(h[i]) + ", not a plausible size");
  Config c;
  c.dModel = h[0];
  c.dFF = h[1];
  c.numLayers = h[2];
  c.numHeads = h[3];
  c.numKvHeads = h[4];
  c.vocabSize = std::abs(h[5]);
  c.contextLength = h[6];
  c.tieEmbeddings = h[5] > 0;
  c.ropeTheta = 10000.0;
  c.rmsNormEps = 1e-5;
  if (Error err = validateConfig(c))
    return fail(err.message());

  // The arrays in file order: name (ours, with {i} for the layer), shape of
  // one layer's slice, and whether the array is stacked over layers.
  int64_t d = c.dModel, kv = c.kvDim(), ff = c.dFF, L = c.numLayers;
  int64_t headSize = d / c.numHeads;
  struct Array {
    std::string name;
    std::vector<int64_t> shape;
    bool perLayer;
  };
  std::vector<Array> arrays = {
      {"token_embeddings.weight", {c.vocabSize, d}, false},
      {"layers.{i}.ln1.weight", {d}, true},
      {"layers.{i}.attn.q_proj.weight", {d, d}, true},
      {"layers.{i}.attn.k_proj.weight", {kv, d}, true},
      {"layers.{i}.attn.v_proj.weight", {kv, d}, true},
      {"layers.{i}.attn.output_proj.weight", {d, d}, true},
      {"layers.{i}.ln2.weight", {d}, true},
      {"layers.{i}.ffn.w1.weight", {ff, d}, true},
      {"layers.{i}.ffn.w2.weight", {d, ff}, true},
      {"layers.{i}.ffn.w3.weight", {ff, d}, true},
      {"ln_final.weight", {d}, false},
      {"", {c.contextLength * headSize / 2}, false}, // legacy RoPE cos
      {"", {c.contextLength * headSize / 2}, false}, // legacy RoPE sin
  };
  if (!c.tieEmbeddings)
    arrays.push_back({"lm_head.weight", {c.vocabSize, d}, false});

  uint64_t offset = 28;
  std::vector<io::TensorView> views;
  std::vector<std::string> keep; // names outlive the views
  for (const Array &a : arrays) {
    uint64_t count = 1;
    for (int64_t s : a.shape)
      count *= s;
    int64_t copies = a.perLayer ? L : 1;
    uint64_t bytesNeeded = count * copies * 4;
    if (offset + bytesNeeded > bytes.size())
      return fail("the file ends at byte " + std::to_string(bytes.size()) +
                  " but " + (a.name.empty() ? "a RoPE table" : a.name) +
                  " needs bytes " + std::to_string(offset) + ".." +
                  std::to_string(offset + bytesNeeded) +
                  " (is the header right?)");
    for (int64_t i = 0; i < copies && !a.name.empty(); ++i) {
      std::string name = a.name;
      if (size_t p = name.find("{i}"); p != std::string::npos)
        name.replace(p, 3, std::to_string(i));
      views.push_back({name, io::DType::F32, a.shape,
                       bytes.data() + offset + i * count * 4});
    }
    offset += bytesNeeded;
  }
  if (offset != bytes.size())
    return fail("has " + std::to_string(bytes.size() - offset) +
                " bytes after the last array (expected exactly " +
                std::to_string(offset) + " bytes)");

  if (Error err =
          writeModelFolder(outDir, c, views, {}, {modelPath}, "import-llama2c"))
    return err;
  return c;
}

} // namespace tlm::model
