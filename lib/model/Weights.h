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
  /// extra or mis-shaped tensor, or one whose dtype is not weightSpecs'
  /// (F32 gains; matrices in the config's dtype), is an error naming it.
  /// `hugePages`: see io::LargeBuffer (Load::Read only).
  static Expected<Weights>
  load(const Config &config, const std::string &path,
       io::SafeTensors::Load mode = io::SafeTensors::Load::Read,
       bool hugePages = true);
  /// Seeded initialisation (see Init.h) into one io::LargeBuffer; fails if
  /// the weights cannot fit in memory.
  static Expected<Weights> init(const Config &config, uint64_t seed,
                                InitScheme scheme, bool hugePages = true);

  /// The dtype the matrices of the weights file `path` are stored in (its
  /// token_embeddings.weight's; Weights::load checks the others), read from
  /// the header without loading the data; F32 when it has none (load()
  /// then reports it missing).
  static Expected<WeightDtype> fileDtype(const std::string &path);

  /// `from` (the weights of `config`, whose dtype they are stored in) with
  /// every matrix converted to `to` (rounded to nearest even when
  /// narrower, quantized as Quantize.h says, dequantized from a quantized
  /// one); the gains are copied. A NaN or Inf that `to` is quantized from
  /// is an error naming the tensor.
  static Expected<Weights> convert(const Weights &from, const Config &config,
                                   WeightDtype to, bool hugePages = true);

  /// One pointer per weightSpecs entry, in order, holding data of the
  /// spec's dtype (a quantized matrix's values, then its scales).
  const std::vector<const void *> &pointers() const { return pointers_; }
  /// Bytes of weight data held.
  size_t bytes() const { return bytes_; }

private:
  std::optional<io::SafeTensors> file_;
  io::LargeBuffer owned_;
  std::vector<const void *> pointers_;
  size_t bytes_ = 0;
};

/// A file an importer writes beside the weights (a tokenizer.json).
struct ModelFile {
  std::string name, text;
};

/// An importer's output: `outDir`/weights.safetensors (`tensors` with
/// `metadata`), the `extra` files, then `outDir`/config.json, creating the
/// folder; files named in `stale` that this import does not write are
/// removed (an earlier model's tokenizer would not fit this one). Refused
/// before anything is written when an output is one of `inputs` (`what`
/// names the command), and every output is opened (a folder in the way,
/// a folder that cannot be written) before the first byte goes to any, so
/// a failure leaves the folder as it was. config.json is renamed into place
/// last: one there means the rest is whole.
Error writeModelFolder(
    const std::string &outDir, const Config &config,
    const std::vector<io::TensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    const std::vector<std::string> &inputs, const std::string &what,
    const std::vector<ModelFile> &extra = {},
    const std::vector<std::string> &stale = {});

} // namespace tlm::model

#endif // TLM_MODEL_WEIGHTS_H
