//===- Session.cpp - a compiled model with bound weights and a KV cache ---===//

#include "lib/runtime/Session.h"

#include "lib/model/ConfigJson.h"
#include "lib/runtime/Artifact.h"

#include <algorithm>
#include <cmath>
#include <cassert>

namespace tlm::runtime {

std::string Session::memoryShortfall(const model::Config &config,
                                     int64_t batch) {
  return model::memoryShortfall(kvCacheBytes(config, batch),
                                "the KV cache of batch " +
                                    std::to_string(batch));
}

double Session::activationBytes(const model::Config &config, int64_t batch,
                                int64_t seq, int threads,
                                bool everyPosition) {
  // Counted on the examples and on variants of each size: per token, a
  // layer keeps 3 x d_model floats until the step ends, and the largest
  // of a layer's transients (the fused Q/K/V and W1/W3 outputs, the norms'
  // and attention's rows) stays under 2 d_ff + 8 d_model + 2 (d_model +
  // 2 kv_dim); attention keeps no (seq x seq) scores. Per thread, the
  // packed panels: 64 rows of the longest reduction (measured 1 x, taken
  // 2 x). The code's result, the logits, is a buffer of its own too.
  double d = config.dModel, ff = config.dFF;
  double perToken = 3 * d * config.numLayers + 2 * ff + 8 * d +
                    2 * (d + 2.0 * config.kvDim());
  double perThread = 2 * 64 * std::max(d, ff);
  double logits = double(batch) * (everyPosition ? seq : 1) * config.vocabSize;
  return 4 * (double(batch) * seq * perToken +
              std::max(1, threads) * perThread + logits);
}

Error Session::setWeights(std::vector<const void *> weights) {
  assert(weights.size() == weightShapes_.size() &&
         "one pointer per weight spec");
  if (!cuda_) {
    weights_ = std::move(weights);
    return Error::success();
  }
  // Uploaded once per session, not per call.
  deviceWeights_.clear();
  weights_.clear();
  for (size_t i = 0; i < weights.size(); ++i) {
    size_t bytes = weightBytes_[i];
    auto device = cuda::allocate(bytes);
    if (!device)
      return device.takeError();
    deviceWeights_.emplace_back(*device);
    if (Error err = cuda::copyToDevice(*device, weights[i], bytes))
      return err;
    weights_.push_back(*device);
  }
  return Error::success();
}

Expected<std::unique_ptr<Session>>
Session::allocate(const model::Config &config, const SessionOptions &options,
                  bool cuda) {
  std::string shortfall = memoryShortfall(config, options.batch);
  if (!shortfall.empty())
    return makeError(shortfall);
  std::unique_ptr<Session> s(new Session(config));
  s->batch_ = options.batch;
  s->positions_.assign(options.batch, 0);
  for (const model::WeightSpec &w : model::weightSpecs(config)) {
    s->weightShapes_.push_back(w.shape);
    s->weightBytes_.push_back(w.bytes());
  }
  // Left uninitialised on purpose: a step reads only the rows written
  // before it, and untouched pages cost no memory, so a short sequence pays
  // for the pages its rows touch, not for the whole context (small.json:
  // 72 MiB; on huge pages at most 2 MiB per layer's keys or values).
  s->layerFloats_ = config.contextLength * options.batch * config.kvDim();
  s->cuda_ = cuda;
  size_t bytes = 2 * config.numLayers * s->layerFloats_ * sizeof(float);
  if (cuda) {
    if (Error err = cuda::available())
      return err;
    auto cache = cuda::allocate(bytes);
    if (!cache)
      return cache.takeError();
    s->deviceCache_.reset(*cache);
    if (options.cudaGraphs) {
      if (!cuda::StepGraph::supported())
        return cuda::unavailable("this CUDA driver cannot record graphs "
                                 "(cuStreamBeginCapture_v2 and cuGraph* "
                                 "need CUDA 12): run without --cuda-graphs");
      s->graph_ = std::make_unique<cuda::StepGraph>();
    }
  } else {
    s->cache_ = io::LargeBuffer::allocate(bytes, options.hugePages);
    if (!s->cache_.data())
      return memoryError("cannot allocate the " + std::to_string(bytes) +
                         " bytes of the KV cache");
  }
  return s;
}

namespace {

/// An error unless every step entry of `m` has the signature the session
/// passes for `config` (Session::run): ids, positions, the caches (their
/// rows kvDim wide), the weights (exactly weightSpecs' shapes); then the
/// logits (vocab wide) and the new caches. The code was compiled for the
/// config's shapes; a manifest that says otherwise would let buffers of
/// the wrong size through Program::call's check.
Error checkSignatures(const std::string &path, const ArtifactManifest &m,
                      const model::Config &config) {
  std::vector<model::WeightSpec> specs = model::weightSpecs(config);
  size_t caches = size_t(2 * config.numLayers);
  size_t inputs = 2 + caches + specs.size(), outputs = 1 + caches;
  for (const ArtifactEntry &e : m.entries) {
    if (e.name != "prefill" && e.name != "decode")
      continue;
    auto bad = [&](const std::string &why) {
      return mismatchError("artifact: " + path + ": its manifest's entry '" +
                           e.name + "' disagrees with its config (" + why +
                           ")");
    };
    if (e.numInputs != inputs || e.shapes.size() != inputs + outputs)
      return bad(std::to_string(e.shapes.size()) + " buffers, " +
                 std::to_string(e.numInputs) + " of them inputs, expected " +
                 std::to_string(inputs + outputs) + ", " +
                 std::to_string(inputs) + " inputs");
    auto rowsOf = [&](size_t i, int64_t width) {
      const std::vector<int64_t> &s = e.shapes[i];
      return s.size() == 3 && s[2] == width;
    };
    for (size_t i = 0; i < caches; ++i)
      if (!rowsOf(2 + i, config.kvDim()) || !rowsOf(inputs + 1 + i, config.kvDim()))
        return bad("a KV cache is not " + std::to_string(config.kvDim()) +
                   " wide");
    for (size_t w = 0; w < specs.size(); ++w)
      if (e.shapes[2 + caches + w] != specs[w].shape)
        return bad("buffer " + std::to_string(2 + caches + w) + " (" +
                   specs[w].name + ") is not " +
                   io::shapeString(specs[w].shape));
    if (!rowsOf(inputs, config.vocabSize))
      return bad("the logits are not " + std::to_string(config.vocabSize) +
                 " wide");
  }
  return Error::success();
}

} // namespace

Expected<std::unique_ptr<Session>>
Session::open(const model::Config &config, const SessionOptions &options) {
  assert(!options.artifact.empty() && "open() runs an artifact");
  // The artifact first: a mismatch is reported before the cache is made.
  auto artifact = LoadedArtifact::load(options.artifact);
  if (!artifact)
    return artifact.takeError();
  if ((*artifact)->manifest().model != model::configToJson(config)) {
    // The same model with weights of another dtype is a mistake of its
    // own, with its own way out.
    auto compiled = model::parseConfig((*artifact)->manifest().model);
    if (compiled && compiled->dtype != config.dtype) {
      model::Config asCompiled = config;
      asCompiled.dtype = compiled->dtype;
      if (model::configToJson(asCompiled) == (*artifact)->manifest().model)
        return mismatchError(
            "artifact: " + options.artifact + ": was compiled for " +
            std::string(model::dtypeName(compiled->dtype)) +
            " weights, and these are " +
            std::string(model::dtypeName(config.dtype)) +
            " (tlm-run compile --weights-dtype " +
            std::string(model::dtypeName(config.dtype)) +
            " makes an artifact for them)");
    }
    return mismatchError("artifact: " + options.artifact +
                         ": was compiled for another model than this config");
  }
  if (Error err = checkSignatures(options.artifact, (*artifact)->manifest(),
                                  config))
    return err;
  auto s = allocate(config, options, (*artifact)->onDevice());
  if (!s)
    return s.takeError();
  (*s)->program_ = std::move(*artifact);
  return s;
}

Session::~Session() {
  if (cuda_)
    cuda::releaseCachedBlocks();
}

int64_t Session::position() const {
  return *std::max_element(positions_.begin(), positions_.end());
}

Error Session::truncate(int64_t b, int64_t length) {
  if (b < 0 || b >= batch_)
    return makeError("sequence " + std::to_string(b) + " is not one of the " +
                     std::to_string(batch_) + " in this session");
  if (length < 0 || length > positions_[b])
    return makeError("sequence " + std::to_string(b) + " has " +
                     std::to_string(positions_[b]) +
                     " positions; it cannot be cut to " +
                     std::to_string(length));
  positions_[b] = length;
  return Error::success();
}

Error Session::step(const int64_t *ids, int64_t seq, float *logits) {
  // One new token: every row is the last one.
  return run(/*lastOnly=*/seq == 1, ids, seq, logits);
}

Error Session::stepLast(const int64_t *ids, int64_t seq, float *logits) {
  return run(/*lastOnly=*/true, ids, seq, logits);
}

Error Session::run(bool lastOnly, const int64_t *ids, int64_t seq,
                   float *logits) {
  assert(weights_.size() == weightShapes_.size() && "setWeights first");
  const model::Config &c = config_;
  if (seq < 1)
    return makeError("a step needs at least one token");
  int64_t past = position();
  // Compared as what is left, never as past + seq: a caller's huge count
  // would wrap the sum past the check.
  if (seq > c.contextLength - past)
    return makeError("sequence of " +
                     std::to_string(uint64_t(past) + uint64_t(seq)) +
                     " tokens exceeds context_length (" +
                     std::to_string(c.contextLength) + ")");
  for (int64_t i = 0; i < batch_ * seq; ++i)
    if (ids[i] < 0 || ids[i] >= c.vocabSize)
      return makeError("token id " + std::to_string(ids[i]) + " at position " +
                       std::to_string(i % seq) + " is out of range [0, " +
                       std::to_string(c.vocabSize) + ")");
  bool together = std::all_of(positions_.begin(), positions_.end(),
                              [&](int64_t p) { return p == past; });
  if (!together && cuda_)
    return makeError("sequences at different positions run on the CPU only "
                     "(the GPU session keeps one position for the batch)");

  int64_t rowFloats = batch_ * c.kvDim();
  std::vector<TensorRef> args;
  args.push_back({const_cast<int64_t *>(ids), {batch_, seq}});
  args.push_back({positions_.data(), {batch_}});
  for (int64_t i = 0; i < 2 * c.numLayers; ++i)
    args.push_back({cacheBuffer(i), {past, batch_, c.kvDim()}});
  for (size_t i = 0; i < weights_.size(); ++i)
    args.push_back({const_cast<void *>(weights_[i]), weightShapes_[i]});
  std::string_view entry = lastOnly ? "decode" : "prefill";
  int64_t logitRows = lastOnly ? 1 : seq;
  args.push_back({logits, {batch_, logitRows, c.vocabSize}});
  // This step's rows land right after the past ones: no copy. Sequences
  // at different positions get theirs scattered after the call.
  int64_t stepFloats = seq * rowFloats;
  if (!together)
    scatter_.resize(2 * c.numLayers * stepFloats);
  for (int64_t i = 0; i < 2 * c.numLayers; ++i)
    args.push_back({together ? cacheBuffer(i) + past * rowFloats
                             : scatter_.data() + i * stepFloats,
                    {seq, batch_, c.kvDim()}});
  if (cuda_) {
    if (Error err = stepOnDevice(entry, ids, seq, logits, logitRows, args))
      return err;
  } else {
    if (Error err = program_->call(entry, args))
      return err;
  }
  if (!together) {
    int64_t kv = c.kvDim();
    for (int64_t i = 0; i < 2 * c.numLayers; ++i)
      for (int64_t t = 0; t < seq; ++t)
        for (int64_t b = 0; b < batch_; ++b)
          std::copy_n(scatter_.data() + i * stepFloats + (t * batch_ + b) * kv,
                      kv,
                      cacheBuffer(i) + ((positions_[b] + t) * batch_ + b) * kv);
  }
  for (int64_t &p : positions_)
    p += seq;
  return Error::success();
}

Error Session::stepOnDevice(std::string_view entry, const int64_t *ids,
                            int64_t seq, float *logits, int64_t logitRows,
                            std::vector<TensorRef> &args) {
  // The ids go up and the logits come back; everything else stays there.
  auto grow = [](cuda::DevicePtr &buffer, size_t &capacity,
                 size_t bytes) -> Error {
    if (bytes <= capacity)
      return Error::success();
    buffer.reset();
    capacity = 0;
    auto device = cuda::allocate(bytes);
    if (!device)
      return device.takeError();
    buffer.reset(*device);
    capacity = bytes;
    return Error::success();
  };
  size_t idsBytes = batch_ * seq * sizeof(int64_t);
  size_t logitsBytes = batch_ * logitRows * config_.vocabSize * sizeof(float);
  size_t lengthsBytes = batch_ * sizeof(int64_t);
  if (Error err = grow(deviceIds_, idsBytes_, idsBytes))
    return err;
  if (Error err = grow(deviceLogits_, logitsBytes_, logitsBytes))
    return err;
  if (Error err = grow(deviceLengths_, lengthsBytes_, lengthsBytes))
    return err;
  // From the first upload on, a failure waits for what is queued, so the
  // next step may refill the staging buffers.
  auto failed = [](Error err) {
    cuda::finishStep();
    return err;
  };
  if (Error err = cuda::upload(deviceIds_.get(), ids, idsBytes, idsStaging_))
    return failed(std::move(err));
  if (Error err = cuda::upload(deviceLengths_.get(), positions_.data(),
                               lengthsBytes, lengthsStaging_))
    return failed(std::move(err));
  size_t logitsArg = 2 + 2 * config_.numLayers + weights_.size();
  args[0].data = deviceIds_.get();
  args[1].data = deviceLengths_.get();
  args[logitsArg].data = deviceLogits_.get();
  // A one-token step is recorded and launched as a graph: the same
  // kernels every step, only the position differs.
  cuda::StepGraph *graph =
      seq == 1 && entry == "decode" ? graph_.get() : nullptr;
  if (graph)
    if (Error err = graph->begin())
      return failed(std::move(err));
  if (Error err = program_->call(entry, args)) {
    if (graph)
      graph->abandon();
    return failed(std::move(err));
  }
  if (graph)
    if (Error err = graph->launch())
      return failed(std::move(err));
  return cuda::download(logits, deviceLogits_.get(), logitsBytes,
                        logitsStaging_);
}

Error checkLogitsFinite(const model::Config &config,
                        const std::vector<const void *> &weights,
                        const float *logits, int64_t count) {
  int64_t vocab = config.vocabSize;
  int64_t bad = 0;
  while (bad < count && std::isfinite(logits[bad]))
    ++bad;
  if (bad == count)
    return Error::success();
  std::string where = "logit " + std::to_string(bad % vocab) + " of row " +
                      std::to_string(bad / vocab);
  // Only on this path: a scan of every weight.
  std::vector<model::WeightSpec> specs = model::weightSpecs(config);
  for (size_t i = 0; i < specs.size() && i < weights.size(); ++i) {
    if (specs[i].dtype == io::DType::I8 || specs[i].dtype == io::DType::U8)
      continue; // quantized values: integers, their scales come next
    int64_t n = specs[i].numElements();
    for (int64_t j = 0; j < n; ++j)
      if (float v = io::elementAsF32(weights[i], specs[i].dtype, j);
          !std::isfinite(v))
        return makeError("the logits are not finite (" + where +
                         "): weight '" + specs[i].name + "' holds " +
                         (std::isnan(v) ? "NaN" : "Inf") + " at element " +
                         std::to_string(j));
  }
  // Not the weights' fault: a failure of the computation (exit code 2,
  // the C API's TLM_ERROR_INTERNAL).
  return Error::withExitCode(2, "the logits are not finite (" + where +
                                    "): the weights are finite, so the "
                                    "model overflows f32");
}

} // namespace tlm::runtime
