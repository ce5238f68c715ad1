//===- Config.cpp - weight lists and parameter counts ---------------------===//

#include "lib/model/Config.h"

#include <cstdio>
#include <unistd.h>

using namespace tlm::model;
namespace io = tlm::io;

std::string_view tlm::model::dtypeName(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32:
    return "f32";
  case WeightDtype::BF16:
    return "bf16";
  case WeightDtype::F16:
    return "f16";
  case WeightDtype::Q8_0:
    return "q8_0";
  case WeightDtype::Q4_0:
    return "q4_0";
  }
  return "?";
}

std::string_view tlm::model::dtypeNames() {
  return "f32, bf16, f16, q8_0, q4_0";
}

bool tlm::model::isQuantized(WeightDtype dtype) {
  return dtype == WeightDtype::Q8_0 || dtype == WeightDtype::Q4_0;
}

WeightDtype tlm::model::matrixFormat(WeightDtype dtype, int64_t dIn) {
  return isQuantized(dtype) && dIn % kQuantBlock != 0 ? WeightDtype::F32
                                                      : dtype;
}

std::optional<tlm::model::WeightDtype>
tlm::model::parseWeightDtype(std::string_view name) {
  for (WeightDtype d : {WeightDtype::F32, WeightDtype::BF16, WeightDtype::F16,
                        WeightDtype::Q8_0, WeightDtype::Q4_0})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

tlm::io::DType tlm::model::storageDType(WeightDtype format) {
  switch (format) {
  case WeightDtype::F32:
    return io::DType::F32;
  case WeightDtype::BF16:
    return io::DType::BF16;
  case WeightDtype::F16:
    return io::DType::F16;
  case WeightDtype::Q8_0:
    return io::DType::I8;
  case WeightDtype::Q4_0:
    return io::DType::U8;
  }
  return io::DType::F32;
}

namespace {
/// Appends the entries of matrix `name` (n, k) in its format under `dtype`.
void addMatrix(std::vector<WeightSpec> &specs, std::string name, int64_t n,
               int64_t k, WeightDtype dtype) {
  WeightDtype f = matrixFormat(dtype, k);
  int64_t stored = f == WeightDtype::Q4_0 ? k / 2 : k;
  specs.push_back({name, {n, stored}, storageDType(f), f, false});
  if (isQuantized(f))
    specs.push_back({std::move(name) + ".scale",
                     {n, k / kQuantBlock},
                     io::DType::F32,
                     f,
                     true});
}
WeightSpec gain(std::string name, int64_t d) {
  return {std::move(name), {d}, io::DType::F32, WeightDtype::F32, false};
}
} // namespace

std::vector<WeightSpec> tlm::model::blockWeightSpecs(const Config &c) {
  int64_t d = c.dModel, kv = c.kvDim();
  std::vector<WeightSpec> specs;
  addMatrix(specs, "attn.q_proj.weight", d, d, c.dtype);
  addMatrix(specs, "attn.k_proj.weight", kv, d, c.dtype);
  addMatrix(specs, "attn.v_proj.weight", kv, d, c.dtype);
  addMatrix(specs, "attn.output_proj.weight", d, d, c.dtype);
  if (c.useRMSNorm)
    specs.push_back(gain("ln1.weight", d));
  addMatrix(specs, "ffn.w1.weight", c.dFF, d, c.dtype);
  addMatrix(specs, "ffn.w2.weight", d, c.dFF, c.dtype);
  if (c.useSwiGLU)
    addMatrix(specs, "ffn.w3.weight", c.dFF, d, c.dtype);
  if (c.useRMSNorm)
    specs.push_back(gain("ln2.weight", d));
  return specs;
}

std::vector<WeightSpec> tlm::model::weightSpecs(const Config &c) {
  std::vector<WeightSpec> specs;
  addMatrix(specs, "token_embeddings.weight", c.vocabSize, c.dModel, c.dtype);
  std::vector<WeightSpec> block = blockWeightSpecs(c);
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (WeightSpec w : block) {
      w.name = "layers." + std::to_string(i) + "." + w.name;
      specs.push_back(std::move(w));
    }
  if (c.useRMSNorm)
    specs.push_back(gain("ln_final.weight", c.dModel));
  if (!c.tieEmbeddings)
    addMatrix(specs, "lm_head.weight", c.vocabSize, c.dModel, c.dtype);
  return specs;
}

int64_t tlm::model::parameterCount(const Config &c) {
  Config wide = c; // one tensor per parameter, one element per weight
  wide.dtype = WeightDtype::F32;
  int64_t n = 0;
  for (const WeightSpec &w : weightSpecs(wide))
    n += w.numElements();
  return n;
}

int64_t tlm::model::weightBytes(const Config &c) {
  int64_t n = 0;
  for (const WeightSpec &w : weightSpecs(c))
    n += w.bytes();
  return n;
}

std::string tlm::model::memoryShortfall(double bytes, const std::string &what) {
  double physical = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (bytes <= physical)
    return "";
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "%s needs %.1f GB but this machine has %.1f GB", what.c_str(),
                bytes / 1e9, physical / 1e9);
  return buf;
}
