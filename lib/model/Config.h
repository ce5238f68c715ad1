//===- Config.h - the TransformerLM hyper-parameters ------------*- C++ -*-===//
#ifndef TLM_MODEL_CONFIG_H
#define TLM_MODEL_CONFIG_H

#include <cstdint>
#include <string>
#include <vector>

namespace tlm::model {

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

  int64_t kvHeads() const { return numKvHeads ? numKvHeads : numHeads; }
  int64_t headDim() const { return dModel / numHeads; }
  int64_t kvDim() const { return kvHeads() * headDim(); }
};

/// One weight tensor the model takes, in entry-argument order.
struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// The weights of `config`, named as in docs/spec/model.md, in the order the
/// built entry points take them.
std::vector<WeightSpec> weightSpecs(const Config &config);

/// The weights of one block, without the `layers.{i}.` prefix.
std::vector<WeightSpec> blockWeightSpecs(const Config &config);

/// Parameter count (docs/spec/model.md formula).
int64_t parameterCount(const Config &config);

/// An empty string when `bytes` of `what` fit in this machine's physical
/// memory, else a message saying how much is needed and available.
std::string memoryShortfall(double bytes, const std::string &what);

} // namespace tlm::model

#endif // TLM_MODEL_CONFIG_H
