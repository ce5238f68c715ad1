//===- Config.cpp - weight lists and parameter counts ---------------------===//

#include "lib/model/Config.h"

#include <cstdio>
#include <unistd.h>

using namespace tlm::model;

std::string_view tlm::model::dtypeName(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32:
    return "f32";
  case WeightDtype::BF16:
    return "bf16";
  case WeightDtype::F16:
    return "f16";
  }
  return "?";
}

std::optional<tlm::model::WeightDtype>
tlm::model::parseWeightDtype(std::string_view name) {
  for (WeightDtype d : {WeightDtype::F32, WeightDtype::BF16, WeightDtype::F16})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

tlm::io::DType tlm::model::storageDType(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32:
    return io::DType::F32;
  case WeightDtype::BF16:
    return io::DType::BF16;
  case WeightDtype::F16:
    return io::DType::F16;
  }
  return io::DType::F32;
}

std::vector<WeightSpec> tlm::model::blockWeightSpecs(const Config &c) {
  int64_t d = c.dModel, kv = c.kvDim();
  io::DType m = storageDType(c.dtype), gain = io::DType::F32;
  std::vector<WeightSpec> specs = {{"attn.q_proj.weight", {d, d}, m},
                                   {"attn.k_proj.weight", {kv, d}, m},
                                   {"attn.v_proj.weight", {kv, d}, m},
                                   {"attn.output_proj.weight", {d, d}, m}};
  if (c.useRMSNorm)
    specs.push_back({"ln1.weight", {d}, gain});
  specs.push_back({"ffn.w1.weight", {c.dFF, d}, m});
  specs.push_back({"ffn.w2.weight", {d, c.dFF}, m});
  if (c.useSwiGLU)
    specs.push_back({"ffn.w3.weight", {c.dFF, d}, m});
  if (c.useRMSNorm)
    specs.push_back({"ln2.weight", {d}, gain});
  return specs;
}

std::vector<WeightSpec> tlm::model::weightSpecs(const Config &c) {
  io::DType m = storageDType(c.dtype);
  std::vector<WeightSpec> specs = {
      {"token_embeddings.weight", {c.vocabSize, c.dModel}, m}};
  std::vector<WeightSpec> block = blockWeightSpecs(c);
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (const WeightSpec &w : block)
      specs.push_back(
          {"layers." + std::to_string(i) + "." + w.name, w.shape, w.dtype});
  if (c.useRMSNorm)
    specs.push_back({"ln_final.weight", {c.dModel}, io::DType::F32});
  if (!c.tieEmbeddings)
    specs.push_back({"lm_head.weight", {c.vocabSize, c.dModel}, m});
  return specs;
}

int64_t tlm::model::parameterCount(const Config &c) {
  int64_t n = 0;
  for (const WeightSpec &w : weightSpecs(c))
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
