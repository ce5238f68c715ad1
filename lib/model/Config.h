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
/// where it is read. Q8_0 and Q4_0 are block-quantized: each run of
/// kQuantBlock weights along d_in shares one f32 scale
/// (docs/spec/config.md#quantized-weights).
enum class WeightDtype { F32, BF16, F16, Q8_0, Q4_0 };

/// The weights that share one scale in Q8_0 and Q4_0, along d_in.
constexpr int64_t kQuantBlock = 32;

/// "f32", "bf16", "f16", "q8_0", "q4_0", and back (nullopt for anything
/// else).
std::string_view dtypeName(WeightDtype dtype);
std::optional<WeightDtype> parseWeightDtype(std::string_view name);
/// Every dtype name, "f32, bf16, f16, q8_0, q4_0", for messages.
std::string_view dtypeNames();
bool isQuantized(WeightDtype dtype);
/// The format a matrix with `dIn` columns takes under the config's `dtype`:
/// that dtype, except that a quantized one whose block does not divide dIn
/// leaves the matrix in F32 (stories260K's d_ff of 172, say).
WeightDtype matrixFormat(WeightDtype dtype, int64_t dIn);
/// The safetensors dtype of a matrix stored as `format`: F32, BF16, F16, I8
/// (q8_0's values) or U8 (q4_0's, two to a byte).
io::DType storageDType(WeightDtype format);

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

/// One weight tensor the model takes, in entry-argument order. A quantized
/// matrix is two: its values (`NAME`, I8 (n, k) or U8 (n, k / 2)) and then
/// its scales (`NAME.scale`, F32 (n, k / kQuantBlock)).
struct WeightSpec {
  std::string name;
  /// As stored (q4_0's values hold two weights a byte).
  std::vector<int64_t> shape;
  /// F32 for a norm gain and a scale; storageDType(format) for a matrix.
  io::DType dtype = io::DType::F32;
  /// The matrix's format (and for a scale, its matrix's); F32 for a gain.
  WeightDtype format = WeightDtype::F32;
  /// The block scales of the matrix just before this entry.
  bool isScale = false;

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

/// Parameter count (docs/spec/model.md formula), whatever the dtype.
int64_t parameterCount(const Config &config);
/// Bytes of all the weights as stored (weightSpecs' dtypes).
int64_t weightBytes(const Config &config);

/// The memory this process may still take, in bytes, and what limits it:
/// the smallest of the machine's physical memory, the headroom under the
/// process's RLIMIT_AS (`ulimit -v`, against its address space now) and
/// RLIMIT_DATA (against its data segment now), and under its cgroup's memory
/// limit (against the cgroup's usage now). With `available`, the machine's
/// part is what it has free now (MemAvailable) rather than in all.
struct MemoryLimit {
  double bytes;
  /// "this machine has", or the limit: "the process's RLIMIT_AS (ulimit -v)
  /// leaves", ...
  std::string what;
  /// Whether `bytes` is already less what the process has mapped but not
  /// touched (the address-space limits count a reservation at once; the
  /// machine's and the cgroup's memory only the pages touched).
  bool countsReservations = false;
};
MemoryLimit memoryLimit(bool available = false);

/// An empty string when `bytes` of `what` fit in memoryLimit(), else a
/// message saying how much is needed and what limits it, the same for each
/// kind of limit: "<what> needs X GB but <limit> Y GB".
std::string memoryShortfall(double bytes, const std::string &what);

} // namespace tlm::model

#endif // TLM_MODEL_CONFIG_H
