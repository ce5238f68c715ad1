//===- Init.h - seeded weight initialisation --------------------*- C++ -*-===//
//
// The built-in default that runs any config with nothing downloaded.
//
// Generator (documented so other tools can reproduce it): tensor number `i`
// of weightSpecs draws from its own SplitMix64 stream seeded with
// `seed * 0x9E3779B97F4A7C15 + i`; a uniform double in (0, 1) is the top 53
// bits of the next output plus half an ulp; normals come from Box-Muller
// (both values used, cos first); truncation rejects draws beyond the cut.
//
//   module: linears N(0, σ²), σ = sqrt(2/(d_in+d_out)), cut at ±3σ;
//           the embedding N(0, 1) cut at ±3; RMSNorm gains 1.
//   gpt2:   linears and the embedding N(0, 0.02²), no cut; gains 1.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_MODEL_INIT_H
#define TLM_MODEL_INIT_H

#include "lib/model/Config.h"

#include <cstdint>
#include <vector>

namespace tlm::model {

enum class InitScheme { Module, GPT2 };

/// One dense f32 tensor per weightSpecs(config) entry, in that order.
std::vector<std::vector<float>> initWeights(const Config &config, uint64_t seed,
                                            InitScheme scheme);
/// The same values written to `out`: one pointer per weightSpecs entry, each
/// to room for that tensor's elements.
void initWeightsInto(const Config &config, uint64_t seed, InitScheme scheme,
                     const std::vector<float *> &out);

} // namespace tlm::model

#endif // TLM_MODEL_INIT_H
