//===- Weights.cpp - the weights a model runs with ------------------------===//

#include "lib/model/Weights.h"

#include "lib/io/FileIO.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Quantize.h"
#include "lib/support/Float16.h"

#include <cassert>
#include <cmath>
#include <filesystem>

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
    return file.takeError().prefixed("weights: ");
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
      return mismatchError("weights: missing tensor '" + spec.name +
                       "' (expected shape " + io::shapeString(spec.shape) +
                       ") in " + path);
    const io::Tensor &t = *it->second.second;
    if (t.dtype != spec.dtype)
      return mismatchError("weights: tensor '" + it->second.first + "' has dtype " +
                       std::string(io::dtypeName(t.dtype)) + ", expected " +
                       std::string(io::dtypeName(spec.dtype)) +
                       (spec.shape.size() == 1
                            ? " (norm gains are F32 whatever the dtype)"
                            : " (the matrices are " +
                                  std::string(dtypeName(config.dtype)) + ")"));
    if (t.shape != spec.shape)
      return mismatchError("weights: tensor '" + it->second.first + "' has shape " +
                       io::shapeString(t.shape) + ", expected " +
                       io::shapeString(spec.shape));
    if (spec.isScale) {
      // One scale stands for a block of weights: a non-finite one would
      // poison every logit it reaches.
      const float *scales = static_cast<const float *>(t.data);
      for (int64_t i = 0; i < spec.numElements(); ++i)
        if (!std::isfinite(scales[i]))
          return makeError("weights: tensor '" + it->second.first + "' holds " +
                           (std::isnan(scales[i]) ? "NaN" : "Inf") +
                           " at element " + std::to_string(i) +
                           " (scales must be finite)");
    }
    w.pointers_.push_back(t.data);
    w.bytes_ += t.bytes;
    byName.erase(it);
  }
  if (!byName.empty())
    return mismatchError("weights: unexpected tensor '" +
                     byName.begin()->second.first + "' in " + path +
                     " (not used by this config)");
  return w;
}

Expected<WeightDtype> Weights::fileDtype(const std::string &path) {
  auto file = io::SafeTensors::open(path, io::SafeTensors::Load::Map);
  if (!file)
    return makeError("weights: " + file.takeError().message());
  // Quantized values are integers (a quantized config may leave some
  // matrices f32, the embedding too); otherwise the embedding's dtype.
  std::optional<WeightDtype> embedding;
  for (const auto &[name, tensor] : file->tensors()) {
    if (tensor.dtype == io::DType::I8)
      return WeightDtype::Q8_0;
    if (tensor.dtype == io::DType::U8)
      return WeightDtype::Q4_0;
    if (canonicalName(name) != "token_embeddings.weight")
      continue;
    switch (tensor.dtype) {
    case io::DType::F32:
      embedding = WeightDtype::F32;
      break;
    case io::DType::BF16:
      embedding = WeightDtype::BF16;
      break;
    case io::DType::F16:
      embedding = WeightDtype::F16;
      break;
    default:
      return makeError("weights: tensor '" + name + "' has dtype " +
                       std::string(io::dtypeName(tensor.dtype)) +
                       ", expected F32, BF16, F16, I8 (q8_0) or U8 (q4_0)");
    }
  }
  // Weights::load names a missing embedding with its shape.
  return embedding.value_or(WeightDtype::F32);
}

namespace {

/// Row `r` of matrix (or gain) `spec`, whose data (and scales, when
/// quantized) are given, as `k` floats.
void readRow(const WeightSpec &spec, const void *data, const void *scales,
             int64_t r, int64_t k, float *row) {
  if (isQuantized(spec.format)) {
    dequantizeRow(
        spec.format,
        static_cast<const char *>(data) + r * quantizedRowBytes(spec.format, k),
        static_cast<const float *>(scales) + r * (k / kQuantBlock), k, row);
    return;
  }
  for (int64_t i = 0; i < k; ++i)
    row[i] = io::elementAsF32(data, spec.dtype, size_t(r * k + i));
}

/// `row` (k floats) as row `r` of `spec` (F32, BF16 or F16 rounded to
/// nearest even, or quantized).
void writeRow(const WeightSpec &spec, void *data, void *scales, int64_t r,
              int64_t k, const float *row) {
  if (isQuantized(spec.format)) {
    quantizeRow(spec.format, row, k,
                static_cast<char *>(data) +
                    r * quantizedRowBytes(spec.format, k),
                static_cast<float *>(scales) + r * (k / kQuantBlock));
    return;
  }
  for (int64_t i = 0; i < k; ++i) {
    size_t at = size_t(r * k + i);
    switch (spec.dtype) {
    case io::DType::BF16:
      static_cast<uint16_t *>(data)[at] = f32ToBF16(row[i]);
      break;
    case io::DType::F16:
      static_cast<uint16_t *>(data)[at] = f32ToF16(row[i]);
      break;
    default:
      static_cast<float *>(data)[at] = row[i];
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
    return memoryError("weights: out of memory converting to " +
                     std::string(dtypeName(to)) + " (" +
                     std::to_string(weightBytes(target)) + " bytes)");
  w.pointers_.assign(out.begin(), out.end());
  // Both lists hold the same tensors in the same order; a quantized one is
  // followed by its scales.
  std::vector<float> row;
  for (size_t i = 0, j = 0; i < fromSpecs.size(); ++i, ++j) {
    const WeightSpec &a = fromSpecs[i], &b = toSpecs[j];
    bool aq = isQuantized(a.format), bq = isQuantized(b.format);
    assert(a.name == b.name && "the same tensor");
    // A gain is one row; a matrix's k is its logical d_in.
    int64_t rows = a.shape.size() == 1 ? 1 : a.shape[0];
    int64_t k = a.shape.size() == 1
                    ? a.shape[0]
                    : a.shape[1] * (a.format == WeightDtype::Q4_0 ? 2 : 1);
    row.resize(size_t(k));
    const void *scalesIn = aq ? from.pointers_[i + 1] : nullptr;
    void *scalesOut = bq ? out[j + 1] : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
      readRow(a, from.pointers_[i], scalesIn, r, k, row.data());
      if (bq)
        for (int64_t c = 0; c < k; ++c)
          if (!std::isfinite(row[size_t(c)]))
            return makeError("weights: tensor '" + a.name + "' holds " +
                             (std::isnan(row[size_t(c)]) ? "NaN" : "Inf") +
                             " at element " + std::to_string(r * k + c) +
                             ", which " + std::string(dtypeName(to)) +
                             " cannot represent");
      // A finite value the narrower float cannot hold (f16 above 65504)
      // would become Inf and the model NaN: refused, not rounded away.
      if (!bq && b.dtype != io::DType::F32)
        for (int64_t c = 0; c < k; ++c) {
          float x = row[size_t(c)];
          float narrowed = b.dtype == io::DType::F16 ? f16ToF32(f32ToF16(x))
                                                     : bf16ToF32(f32ToBF16(x));
          if (std::isfinite(x) && !std::isfinite(narrowed))
            return makeError("weights: tensor '" + a.name + "' holds " +
                             std::to_string(x) + " at element " +
                             std::to_string(r * k + c) + ", beyond " +
                             std::string(dtypeName(to)) +
                             "'s largest finite value" +
                             (b.dtype == io::DType::F16
                                  ? " 65504 (bf16 keeps f32's range)"
                                  : ""));
        }
      writeRow(b, out[j], scalesOut, r, k, row.data());
    }
    i += aq;
    j += bq;
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
    return memoryError("weights: out of memory initialising " +
                     std::to_string(total * sizeof(float)) + " bytes");
  std::vector<float *> out;
  for (size_t offset : offsets) {
    out.push_back(static_cast<float *>(w.owned_.data()) + offset);
    w.pointers_.push_back(out.back());
  }
  initWeightsInto(config, seed, scheme, out);
  return w;
}

Error writeModelFolder(
    const std::string &outDir, const Config &config,
    const std::vector<io::TensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    const std::vector<std::string> &inputs, const std::string &what,
    const std::vector<ModelFile> &extra,
    const std::vector<std::string> &stale) {
  // A folder tlm would refuse to load is not written at all.
  if (Error err = checkLoadable(config))
    return makeError(what + ": the model's config would not load: " +
                     err.message());
  std::string configPath = outDir + "/config.json";
  std::string weightsPath = outDir + "/weights.safetensors";
  std::vector<std::string> paths = {weightsPath};
  for (const ModelFile &f : extra)
    paths.push_back(outDir + "/" + f.name);
  paths.push_back(configPath);
  for (const std::string &output : paths)
    if (Error err = io::refuseOverwritingInput(output, inputs, what + ": output"))
      return err;
  std::error_code ec;
  std::filesystem::create_directories(outDir, ec);
  if (ec)
    return makeError(what + ": cannot create " + outDir + ": " + ec.message());
  // Every output opened before any is written: weights, extras, config.
  std::vector<io::AtomicFile> files;
  for (const std::string &path : paths) {
    Expected<io::AtomicFile> file = io::AtomicFile::create(path);
    if (!file)
      return file.takeError();
    files.push_back(std::move(*file));
  }
  if (Error err = io::writeSafeTensors(files.front(), tensors, metadata))
    return err;
  for (size_t i = 0; i < extra.size(); ++i)
    if (Error err = files[i + 1].write(extra[i].text))
      return err;
  if (Error err = files.back().write(configToJson(config)))
    return err;
  // Every byte written: now the folder changes. An old config.json goes
  // first (it would claim old weights whole should a later rename fail),
  // and the stale files with it; config.json comes back last.
  auto removeFile = [&](const std::string &path) {
    if (std::filesystem::is_regular_file(
            std::filesystem::symlink_status(path, ec)))
      std::filesystem::remove(path, ec);
  };
  removeFile(configPath);
  for (const std::string &name : stale) {
    bool written = false;
    for (const ModelFile &f : extra)
      written |= f.name == name;
    if (!written)
      removeFile(outDir + "/" + name);
  }
  for (io::AtomicFile &file : files)
    if (Error err = file.commit())
      return err;
  return Error::success();
}

} // namespace tlm::model
