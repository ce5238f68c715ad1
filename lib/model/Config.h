//===- Config.h - the TransformerLM hyper-parameters ------------*- C++ -*-===//
#ifndef TLM_MODEL_CONFIG_H
#define TLM_MODEL_CONFIG_H

#include "lib/io/SafeTensors.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tlm::model {

/// How the weight matrices (the embedding table, the projections, the LM
/// head) are stored: the config's `dtype`. Norm gains stay f32, and the
/// activations compute in f32 whatever it is; a narrower matrix is widened
/// where it is read.
enum class WeightDtype { F32, BF16, F16 };

/// "f32", "bf16", "f16", and back (nullopt for anything else).
std::string_view dtypeName(WeightDtype dtype);
std::optional<WeightDtype> parseWeightDtype(std::string_view name);
/// The safetensors dtype of a matrix stored as `dtype`.
io::DType storageDType(WeightDtype dtype);

/// The most layers a config may have: each entry calls the block once per
/// layer, so the compile time grows with them (1024 tiny layers took 24 s).
/// The largest Llama-family models have 126.
constexpr int64_t kMaxLayers = 256;

/// A TransformerLM as docs/spec/config.md#config describes it; defaults are the
/// spec's defaults.
struct Config {
  int64_t vocabSize = 0;
  int64_t contextLength = 0;
  int64_t dModel = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0; ///< 0 means "same as numHeads"
  int64_t dFF = 0;
  double ropeTheta = 10000.0;
  double rmsNormEps = 1e-5;
  bool useRMSNorm = true;
  bool postNorm = false; ///< norm_position "post"
  bool useRope = true;
  bool useSwiGLU = true;
  bool tieEmbeddings = false;
  WeightDtype dtype = WeightDtype::F32;

  int64_t kvHeads() const { return numKvHeads ? numKvHeads : numHeads; }
  int64_t headDim() const { return dModel / numHeads; }
  int64_t kvDim() const { return kvHeads() * headDim(); }
};

/// One weight tensor the model takes, in entry-argument order.
struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  /// F32 for a norm gain; the config's storage dtype for a matrix.
  io::DType dtype = io::DType::F32;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t bytes() const { return numElements() * io::dtypeSize(dtype); }
};

/// The weights of `config`, named as in docs/spec/model.md, in the order the
/// built entry points take them.
std::vector<WeightSpec> weightSpecs(const Config &config);

/// The weights of one block, without the `layers.{i}.` prefix.
std::vector<WeightSpec> blockWeightSpecs(const Config &config);

/// Parameter count (docs/spec/model.md formula).
int64_t parameterCount(const Config &config);
/// Bytes of all the weights as stored (weightSpecs' dtypes).
int64_t weightBytes(const Config &config);

/// An empty string when `bytes` of `what` fit in this machine's physical
/// memory, else a message saying how much is needed and available.
std::string memoryShortfall(double bytes, const std::string &what);

} // namespace tlm::model

#endif // TLM_MODEL_CONFIG_H
