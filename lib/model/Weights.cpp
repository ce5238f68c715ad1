//===- Weights.cpp - the weights a model runs with ------------------------===//

#include "lib/model/Weights.h"

#include <map>

namespace tlm::model {

namespace {
/// The canonical spelling of a checkpoint key.
std::string canonicalName(std::string_view name) {
  consumeFront(name, "_orig_mod.");
  std::string s(name);
  if (size_t p = s.find(".attn.o_proj."); p != std::string::npos)
    s.replace(p, 13, ".attn.output_proj.");
  return s;
}
} // namespace

Expected<Weights> Weights::load(const Config &config, const std::string &path,
                                io::SafeTensors::Load mode, bool hugePages) {
  auto file = io::SafeTensors::open(path, mode, hugePages);
  if (!file)
    return makeError("weights: " + file.takeError().message());
  Weights w;
  w.file_ = std::move(*file);
  std::map<std::string, std::pair<std::string, const io::Tensor *>> byName;
  for (const auto &[name, tensor] : w.file_->tensors()) {
    std::string canon = canonicalName(name);
    auto [it, inserted] = byName.try_emplace(canon, name, &tensor);
    if (!inserted)
      return makeError("weights: tensors '" + it->second.first + "' and '" +
                       name + "' both name '" + canon + "'");
  }
  for (const WeightSpec &spec : weightSpecs(config)) {
    auto it = byName.find(spec.name);
    if (it == byName.end())
      return makeError("weights: missing tensor '" + spec.name +
                       "' (expected shape " + io::shapeString(spec.shape) +
                       ") in " + path);
    const io::Tensor &t = *it->second.second;
    if (t.dtype != io::DType::F32)
      return makeError("weights: tensor '" + it->second.first + "' has dtype " +
                       std::string(io::dtypeName(t.dtype)) + ", expected F32");
    if (t.shape != spec.shape)
      return makeError("weights: tensor '" + it->second.first + "' has shape " +
                       io::shapeString(t.shape) + ", expected " +
                       io::shapeString(spec.shape));
    w.pointers_.push_back(t.f32());
    w.bytes_ += t.bytes;
    byName.erase(it);
  }
  if (!byName.empty())
    return makeError("weights: unexpected tensor '" +
                     byName.begin()->second.first + "' in " + path +
                     " (not used by this config)");
  return w;
}

Expected<Weights> Weights::init(const Config &config, uint64_t seed,
                                InitScheme scheme, bool hugePages) {
  std::string shortfall = memoryShortfall(4.0 * double(parameterCount(config)),
                                          "initialising the weights");
  if (!shortfall.empty())
    return makeError("weights: " + shortfall);
  // One block, each tensor at a 64-byte boundary (16 floats): offsets
  // first, pointers once the block exists.
  std::vector<size_t> offsets;
  size_t total = 0;
  Weights w;
  for (const WeightSpec &s : weightSpecs(config)) {
    size_t n = size_t(s.numElements());
    offsets.push_back(total);
    total += (n + 15) / 16 * 16;
    w.bytes_ += n * sizeof(float);
  }
  w.owned_ = io::LargeBuffer::allocate(total * sizeof(float), hugePages);
  if (!w.owned_.data())
    return makeError("weights: out of memory initialising " +
                     std::to_string(total * sizeof(float)) + " bytes");
  std::vector<float *> out;
  for (size_t offset : offsets) {
    out.push_back(static_cast<float *>(w.owned_.data()) + offset);
    w.pointers_.push_back(out.back());
  }
  initWeightsInto(config, seed, scheme, out);
  return w;
}

} // namespace tlm::model
