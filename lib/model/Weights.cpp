//===- Weights.cpp - the weights a model runs with ------------------------===//

#include "lib/model/Weights.h"

#include "lib/support/Float16.h"

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
    if (t.dtype != spec.dtype)
      return makeError("weights: tensor '" + it->second.first + "' has dtype " +
                       std::string(io::dtypeName(t.dtype)) + ", expected " +
                       std::string(io::dtypeName(spec.dtype)) +
                       (spec.shape.size() == 1
                            ? " (norm gains are F32 whatever the dtype)"
                            : " (the matrices are " +
                                  std::string(dtypeName(config.dtype)) + ")"));
    if (t.shape != spec.shape)
      return makeError("weights: tensor '" + it->second.first + "' has shape " +
                       io::shapeString(t.shape) + ", expected " +
                       io::shapeString(spec.shape));
    w.pointers_.push_back(t.data);
    w.bytes_ += t.bytes;
    byName.erase(it);
  }
  if (!byName.empty())
    return makeError("weights: unexpected tensor '" +
                     byName.begin()->second.first + "' in " + path +
                     " (not used by this config)");
  return w;
}

Expected<WeightDtype> Weights::fileDtype(const std::string &path) {
  auto file = io::SafeTensors::open(path, io::SafeTensors::Load::Map);
  if (!file)
    return makeError("weights: " + file.takeError().message());
  for (const auto &[name, tensor] : file->tensors()) {
    if (canonicalName(name) != "token_embeddings.weight")
      continue;
    switch (tensor.dtype) {
    case io::DType::F32:
      return WeightDtype::F32;
    case io::DType::BF16:
      return WeightDtype::BF16;
    case io::DType::F16:
      return WeightDtype::F16;
    default:
      return makeError("weights: tensor '" + name + "' has dtype " +
                       std::string(io::dtypeName(tensor.dtype)) +
                       ", expected F32, BF16 or F16");
    }
  }
  // Weights::load names the missing tensor with its shape.
  return WeightDtype::F32;
}

namespace {

/// `n` values of `from` as `to` (F32, BF16 or F16).
void convertValues(const void *from, io::DType fromType, void *to,
                   io::DType toType, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float v = io::elementAsF32(from, fromType, i);
    switch (toType) {
    case io::DType::BF16:
      static_cast<uint16_t *>(to)[i] = f32ToBF16(v);
      break;
    case io::DType::F16:
      static_cast<uint16_t *>(to)[i] = f32ToF16(v);
      break;
    default:
      static_cast<float *>(to)[i] = v;
    }
  }
}

/// One block holding every spec's tensor at a 64-byte boundary, and the
/// pointers into it.
bool allocateFor(const std::vector<WeightSpec> &specs, bool hugePages,
                 io::LargeBuffer &owned, std::vector<void *> &out,
                 size_t &bytes) {
  std::vector<size_t> offsets;
  size_t total = 0;
  bytes = 0;
  for (const WeightSpec &s : specs) {
    offsets.push_back(total);
    total += (s.bytes() + 63) / 64 * 64;
    bytes += s.bytes();
  }
  owned = io::LargeBuffer::allocate(total, hugePages);
  if (!owned.data())
    return false;
  for (size_t offset : offsets)
    out.push_back(static_cast<char *>(owned.data()) + offset);
  return true;
}

} // namespace

Expected<Weights> Weights::convert(const Weights &from, const Config &config,
                                   WeightDtype to, bool hugePages) {
  Config target = config;
  target.dtype = to;
  std::vector<WeightSpec> fromSpecs = weightSpecs(config),
                          toSpecs = weightSpecs(target);
  Weights w;
  std::vector<void *> out;
  if (!allocateFor(toSpecs, hugePages, w.owned_, out, w.bytes_))
    return makeError("weights: out of memory converting to " +
                     std::string(dtypeName(to)) + " (" +
                     std::to_string(weightBytes(target)) + " bytes)");
  for (size_t i = 0; i < toSpecs.size(); ++i) {
    convertValues(from.pointers_[i], fromSpecs[i].dtype, out[i],
                  toSpecs[i].dtype, size_t(toSpecs[i].numElements()));
    w.pointers_.push_back(out[i]);
  }
  return w;
}

Expected<Weights> Weights::init(const Config &config, uint64_t seed,
                                InitScheme scheme, bool hugePages) {
  if (config.dtype != WeightDtype::F32) {
    // Initialised in f32, then rounded: the same model, narrower.
    Config f32 = config;
    f32.dtype = WeightDtype::F32;
    auto wide = init(f32, seed, scheme, hugePages);
    if (!wide)
      return wide.takeError();
    return convert(*wide, f32, config.dtype, hugePages);
  }
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
