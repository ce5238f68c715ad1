//===- Session.cpp - a compiled model with bound weights and a KV cache ---===//

#include "lib/runtime/Session.h"

#include "lib/model/Builder.h"
#include "lib/model/ConfigJson.h"
#include "lib/runtime/CpuCodegen.h"

#include <malloc.h>

namespace tlm::runtime {

std::string Session::memoryShortfall(const model::Config &config,
                                     int64_t batch) {
  return model::memoryShortfall(kvCacheBytes(config, batch),
                                "the KV cache of batch " +
                                    std::to_string(batch));
}

llvm::Expected<std::unique_ptr<Session>>
Session::create(const model::Config &config, std::vector<const float *> weights,
                const SessionOptions &options) {
  auto s = compile(config, options);
  if (!s)
    return s.takeError();
  if (llvm::Error err = (*s)->setWeights(std::move(weights)))
    return std::move(err);
  return s;
}

llvm::Error Session::setWeights(std::vector<const float *> weights) {
  assert(weights.size() == weightShapes_.size() &&
         "one pointer per weight spec");
  if (!cuda_) {
    weights_ = std::move(weights);
    return llvm::Error::success();
  }
  // Uploaded once per session, not per call.
  deviceWeights_.clear();
  weights_.clear();
  for (size_t i = 0; i < weights.size(); ++i) {
    size_t bytes = sizeof(float);
    for (int64_t d : weightShapes_[i])
      bytes *= d;
    auto device = cuda::allocate(bytes);
    if (!device)
      return device.takeError();
    deviceWeights_.emplace_back(*device);
    if (llvm::Error err = cuda::copyToDevice(*device, weights[i], bytes))
      return err;
    weights_.push_back(static_cast<const float *>(*device));
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Session>>
Session::compile(const model::Config &config, const SessionOptions &options) {
  std::vector<model::WeightSpec> specs = model::weightSpecs(config);
  std::string shortfall = memoryShortfall(config, options.batch);
  if (!shortfall.empty())
    return llvm::createStringError(shortfall);
  std::unique_ptr<Session> s(new Session(config));
  s->batch_ = options.batch;
  for (const model::WeightSpec &w : specs)
    s->weightShapes_.push_back(w.shape);
  // Left uninitialised on purpose: a step reads only the rows written
  // before it, and untouched pages cost no memory, so a short sequence pays
  // for the pages its rows touch, not for the whole context (small.json:
  // 72 MiB; on huge pages at most 2 MiB per layer's keys or values).
  s->layerFloats_ = config.contextLength * options.batch * config.kvDim();
  s->cuda_ = options.jit.target == Target::Cuda;
  if (s->cuda_) {
    if (llvm::Error err = cuda::available())
      return std::move(err);
    auto cache =
        cuda::allocate(2 * config.numLayers * s->layerFloats_ * sizeof(float));
    if (!cache)
      return cache.takeError();
    s->deviceCache_.reset(*cache);
  } else {
    size_t bytes = 2 * config.numLayers * s->layerFloats_ * sizeof(float);
    s->cache_ = io::LargeBuffer::allocate(bytes, options.hugePages);
    if (!s->cache_.data())
      return llvm::createStringError("cannot allocate the " +
                                     std::to_string(bytes) +
                                     " bytes of the KV cache");
  }

  if (!options.artifact.empty()) {
    // The artifact's code, for the model it was compiled for.
    auto jit = Jit::loadArtifact(options.artifact);
    if (!jit)
      return jit.takeError();
    const ArtifactManifest *m = (*jit)->artifactManifest();
    if (m->model != model::configToJson(config))
      return llvm::createStringError(
          "artifact: " + options.artifact +
          ": was compiled for another model than this config");
    s->jit_ = std::move(*jit);
    return s;
  }
  {
    // Only the compiler needs the context: the machine code does not refer
    // to its uniqued types and attributes.
    mlir::DialectRegistry registry;
    registerAll(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
    model::addGenerationFunctions(*module, config);
    JitOptions jitOptions = options.jit;
    jitOptions.weightBytes = model::parameterCount(config) * sizeof(float);
    jitOptions.artifactModel = model::configToJson(config);
    auto jit = Jit::compile(std::move(module), jitOptions);
    if (!jit)
      return jit.takeError();
    s->jit_ = std::move(*jit);
  }
  // The compiler's heap is free now; hand it back to the OS (glibc keeps
  // it otherwise, and it would count on top of the weights).
  malloc_trim(0);
  return s;
}

llvm::Error Session::step(const int64_t *ids, int64_t seq, float *logits) {
  // One new token: every row is the last one.
  return run(/*lastOnly=*/seq == 1, ids, seq, logits);
}

llvm::Error Session::stepLast(const int64_t *ids, int64_t seq, float *logits) {
  return run(/*lastOnly=*/true, ids, seq, logits);
}

llvm::Error Session::run(bool lastOnly, const int64_t *ids, int64_t seq,
                         float *logits) {
  assert(weights_.size() == weightShapes_.size() && "setWeights first");
  const model::Config &c = config_;
  if (seq < 1)
    return llvm::createStringError("a step needs at least one token");
  if (position_ + seq > c.contextLength)
    return llvm::createStringError("sequence of " +
                                   std::to_string(position_ + seq) +
                                   " tokens exceeds context_length (" +
                                   std::to_string(c.contextLength) + ")");
  for (int64_t i = 0; i < batch_ * seq; ++i)
    if (ids[i] < 0 || ids[i] >= c.vocabSize)
      return llvm::createStringError("token id " + std::to_string(ids[i]) +
                                     " at position " + std::to_string(i % seq) +
                                     " is out of range [0, " +
                                     std::to_string(c.vocabSize) + ")");

  int64_t rowFloats = batch_ * c.kvDim();
  std::vector<TensorRef> args;
  args.push_back({const_cast<int64_t *>(ids), {batch_, seq}});
  for (int64_t i = 0; i < 2 * c.numLayers; ++i)
    args.push_back({cacheBuffer(i), {position_, batch_, c.kvDim()}});
  for (size_t i = 0; i < weights_.size(); ++i)
    args.push_back({const_cast<float *>(weights_[i]), weightShapes_[i]});
  llvm::StringRef entry = lastOnly ? "decode" : "prefill";
  int64_t logitRows = lastOnly ? 1 : seq;
  args.push_back({logits, {batch_, logitRows, c.vocabSize}});
  // This step's rows land right after the past ones: no copy.
  for (int64_t i = 0; i < 2 * c.numLayers; ++i)
    args.push_back(
        {cacheBuffer(i) + position_ * rowFloats, {seq, batch_, c.kvDim()}});
  if (cuda_) {
    if (llvm::Error err =
            stepOnDevice(entry, ids, seq, logits, logitRows, args))
      return err;
  } else {
    if (llvm::Error err = jit_->call(entry, args))
      return err;
  }
  position_ += seq;
  return llvm::Error::success();
}

llvm::Error Session::stepOnDevice(llvm::StringRef entry, const int64_t *ids,
                                  int64_t seq, float *logits, int64_t logitRows,
                                  std::vector<TensorRef> &args) {
  // The ids go up and the logits come back; everything else stays there.
  auto grow = [](cuda::DevicePtr &buffer, size_t &capacity,
                 size_t bytes) -> llvm::Error {
    if (bytes <= capacity)
      return llvm::Error::success();
    buffer.reset();
    capacity = 0;
    auto device = cuda::allocate(bytes);
    if (!device)
      return device.takeError();
    buffer.reset(*device);
    capacity = bytes;
    return llvm::Error::success();
  };
  size_t idsBytes = batch_ * seq * sizeof(int64_t);
  size_t logitsBytes = batch_ * logitRows * config_.vocabSize * sizeof(float);
  if (llvm::Error err = grow(deviceIds_, idsBytes_, idsBytes))
    return err;
  if (llvm::Error err = grow(deviceLogits_, logitsBytes_, logitsBytes))
    return err;
  if (llvm::Error err = cuda::copyToDevice(deviceIds_.get(), ids, idsBytes))
    return err;
  size_t logitsArg = 1 + 2 * config_.numLayers + weights_.size();
  args[0].data = deviceIds_.get();
  args[logitsArg].data = deviceLogits_.get();
  if (llvm::Error err = jit_->call(entry, args))
    return err;
  return cuda::copyToHost(logits, deviceLogits_.get(), logitsBytes);
}

} // namespace tlm::runtime
