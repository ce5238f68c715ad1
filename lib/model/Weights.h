//===- Weights.h - the weights a model runs with ----------------*- C++ -*-===//
//
// Either a safetensors file (names per docs/spec/model.md; the `o_proj` alias
// and a `_orig_mod.` prefix are accepted) or seeded initialisation. Either way
// exactly one copy of each tensor lives in memory and the session binds it.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_MODEL_WEIGHTS_H
#define TLM_MODEL_WEIGHTS_H

#include "lib/io/SafeTensors.h"
#include "lib/model/Config.h"
#include "lib/model/Init.h"

#include <optional>

namespace tlm::model {

class Weights {
public:
  /// Loads `path` and checks every tensor against `config`: a missing,
  /// extra, mis-shaped or non-F32 tensor is an error naming it.
  /// `hugePages`: see io::LargeBuffer (Load::Read only).
  static Expected<Weights>
  load(const Config &config, const std::string &path,
       io::SafeTensors::Load mode = io::SafeTensors::Load::Read,
       bool hugePages = true);
  /// Seeded initialisation (see Init.h) into one io::LargeBuffer; fails if
  /// the weights cannot fit in memory.
  static Expected<Weights> init(const Config &config, uint64_t seed,
                                InitScheme scheme, bool hugePages = true);

  /// One pointer per weightSpecs entry, in order.
  const std::vector<const float *> &pointers() const { return pointers_; }
  /// Bytes of weight data held.
  size_t bytes() const { return bytes_; }

private:
  std::optional<io::SafeTensors> file_;
  io::LargeBuffer owned_;
  std::vector<const float *> pointers_;
  size_t bytes_ = 0;
};

} // namespace tlm::model

#endif // TLM_MODEL_WEIGHTS_H
