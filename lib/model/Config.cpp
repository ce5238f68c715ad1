//===- Config.cpp - weight lists and parameter counts ---------------------===//

#include "lib/model/Config.h"

#include <cstdio>
#include <unistd.h>

using namespace tlm::model;

std::vector<WeightSpec> tlm::model::blockWeightSpecs(const Config &c) {
  int64_t d = c.dModel, kv = c.kvDim();
  std::vector<WeightSpec> specs = {{"attn.q_proj.weight", {d, d}},
                                   {"attn.k_proj.weight", {kv, d}},
                                   {"attn.v_proj.weight", {kv, d}},
                                   {"attn.output_proj.weight", {d, d}}};
  if (c.useRMSNorm)
    specs.push_back({"ln1.weight", {d}});
  specs.push_back({"ffn.w1.weight", {c.dFF, d}});
  specs.push_back({"ffn.w2.weight", {d, c.dFF}});
  if (c.useSwiGLU)
    specs.push_back({"ffn.w3.weight", {c.dFF, d}});
  if (c.useRMSNorm)
    specs.push_back({"ln2.weight", {d}});
  return specs;
}

std::vector<WeightSpec> tlm::model::weightSpecs(const Config &c) {
  std::vector<WeightSpec> specs = {
      {"token_embeddings.weight", {c.vocabSize, c.dModel}}};
  std::vector<WeightSpec> block = blockWeightSpecs(c);
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (const WeightSpec &w : block)
      specs.push_back({"layers." + std::to_string(i) + "." + w.name, w.shape});
  if (c.useRMSNorm)
    specs.push_back({"ln_final.weight", {c.dModel}});
  if (!c.tieEmbeddings)
    specs.push_back({"lm_head.weight", {c.vocabSize, c.dModel}});
  return specs;
}

int64_t tlm::model::parameterCount(const Config &c) {
  int64_t n = 0;
  for (const WeightSpec &w : weightSpecs(c))
    n += w.numElements();
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
