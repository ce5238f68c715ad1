//===- Training.cpp - a compiled training step and its buffers ------------===//

#include "lib/runtime/Training.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tlm::runtime {

Expected<TrainingBatch> splitTokens(const io::TokenMatrix &tokens,
                                    const model::Config &c) {
  if (tokens.seq < 2)
    return makeError("training tokens need at least 2 a row (inputs and the "
                     "next token as target), found " +
                     std::to_string(tokens.seq));
  if (tokens.seq > c.contextLength + 1)
    return makeError("training rows of " + std::to_string(tokens.seq) +
                     " tokens exceed context_length + 1 (" +
                     std::to_string(c.contextLength + 1) + ")");
  for (int64_t b = 0; b < tokens.batch; ++b)
    for (int64_t t = 0; t < tokens.seq; ++t) {
      int64_t id = tokens.ids[b * tokens.seq + t];
      if (id < 0 || id >= c.vocabSize)
        return makeError("token id " + std::to_string(id) + " at row " +
                         std::to_string(b) + ", column " + std::to_string(t) +
                         " is out of range [0, " + std::to_string(c.vocabSize) +
                         ")");
    }
  TrainingBatch out;
  out.batch = tokens.batch;
  out.seq = tokens.seq - 1;
  for (int64_t b = 0; b < tokens.batch; ++b) {
    const int64_t *row = tokens.ids.data() + b * tokens.seq;
    out.inputs.insert(out.inputs.end(), row, row + out.seq);
    out.targets.insert(out.targets.end(), row + 1, row + tokens.seq);
  }
  return out;
}

std::string TrainingMemory::parts(bool mebibytes) const {
  double unit = mebibytes ? 1048576.0 : 1e6;
  const char *name = mebibytes ? "MiB" : "MB";
  char text[256];
  std::snprintf(text, sizeof text,
                "parameters %.1f %s, gradients %.1f %s, moments %.1f %s, "
                "activations %.1f %s",
                parameters / unit, name, gradients / unit, name,
                moments / unit, name, activations / unit, name);
  return text;
}

TrainingMemory trainingMemory(const model::Config &c, int64_t batch,
                              int64_t seq, bool optimizer) {
  double params = 0;
  for (const model::WeightSpec &s : model::weightSpecs(c))
    params += double(s.numElements());
  TrainingMemory m;
  m.parameters = 4 * params;
  m.gradients = 4 * params;
  m.moments = optimizer ? 8 * params : 0;
  double d = double(c.dModel), kv = double(c.kvDim()), ff = double(c.dFF);
  double gates = c.useSwiGLU ? 3 : 2;
  double perLayer = 7 * d + 3 * kv + gates * ff;
  double perToken = double(c.numLayers) * perLayer + 3 * double(c.vocabSize) +
                    4 * d + 2 * ff;
  double tokens = double(batch) * double(seq);
  // The values the backward reads, kept from the forward or (norm outputs,
  // the gate product, rotated Q and K) recomputed there. The compiled
  // step's heap peaks at about twice their count: the backward's gradients
  // in flight and the transposed copies its weight gradients read (measured
  // 2.04x on the baby-GPT shape and 2.06x on the CS336 TinyStories one with
  // every value kept, 1.83x and 1.93x since the step recomputes the cheap
  // ones; Program::heap().peak, docs/training.md).
  constexpr double kWorkspace = 2.0;
  m.activations = 4 * kWorkspace * (tokens * perToken + 2 * double(seq) * double(seq));
  return m;
}

Error checkTrainingMemory(const TrainingMemory &memory) {
  std::string shortfall = model::memoryShortfall(
      memory.total(), "training (" + memory.parts() + ")");
  if (shortfall.empty())
    return Error::success();
  return makeError(shortfall);
}

Expected<std::unique_ptr<Trainer>>
Trainer::create(const model::Config &config, std::unique_ptr<Program> program,
                const model::Weights &initial) {
  if (config.dtype != model::WeightDtype::F32)
    return makeError("training is f32: the weights are " +
                     std::string(model::dtypeName(config.dtype)) +
                     " (convert them with tlm-run quantize --dtype f32)");
  std::unique_ptr<Trainer> t(new Trainer());
  t->config_ = config;
  t->program_ = std::move(program);
  t->specs_ = model::weightSpecs(config);
  const std::vector<const void *> &pointers = initial.pointers();
  if (pointers.size() != t->specs_.size())
    return makeError("the weights do not match the config");
  for (size_t i = 0; i < t->specs_.size(); ++i) {
    size_t n = t->specs_[i].numElements();
    const float *src = static_cast<const float *>(pointers[i]);
    t->params_.emplace_back(src, src + n);
    t->grads_.emplace_back(n, 0.0f);
  }
  return t;
}

Error Trainer::restore(std::vector<std::vector<float>> m,
                       std::vector<std::vector<float>> v, int64_t steps) {
  if (m.size() != specs_.size() || v.size() != specs_.size())
    return makeError("the moments do not match the model's " +
                     std::to_string(specs_.size()) + " parameters");
  for (size_t i = 0; i < specs_.size(); ++i)
    if (int64_t(m[i].size()) != specs_[i].numElements() ||
        int64_t(v[i].size()) != specs_[i].numElements())
      return makeError("the moments of " + specs_[i].name +
                       " do not have its " +
                       std::to_string(specs_[i].numElements()) + " elements");
  if (steps < 0)
    return makeError("a negative step count");
  m_ = std::move(m);
  v_ = std::move(v);
  steps_ = steps;
  return Error::success();
}

std::vector<TensorRef> Trainer::inputs(const TrainingBatch &batch) {
  // The entry takes non-const buffers; it never writes its inputs.
  ids_ = batch.inputs;
  targets_ = batch.targets;
  std::vector<TensorRef> args{{ids_.data(), {batch.batch, batch.seq}},
                              {targets_.data(), {batch.batch, batch.seq}}};
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({params_[i].data(), specs_[i].shape});
  return args;
}

Error Trainer::checkFinite(float loss) const {
  if (!std::isfinite(loss))
    return makeError("the loss is not finite (" + std::to_string(loss) + ")");
  for (size_t i = 0; i < specs_.size(); ++i)
    for (float g : grads_[i])
      if (!std::isfinite(g))
        return makeError("the gradient of " + specs_[i].name +
                         " is not finite (" + std::to_string(g) + ")");
  return Error::success();
}

Expected<float> Trainer::computeGradients(const TrainingBatch &batch) {
  float loss = 0;
  std::vector<TensorRef> args = inputs(batch);
  args.push_back({&loss, {}});
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({grads_[i].data(), specs_[i].shape});
  if (Error err = program_->call(kGradStepEntry, args))
    return std::move(err);
  if (Error err = checkFinite(loss))
    return std::move(err);
  return loss;
}

Expected<float> Trainer::loss(const TrainingBatch &batch) {
  float value = 0;
  std::vector<TensorRef> args = inputs(batch);
  args.push_back({&value, {}});
  if (Error err = program_->call(kLossEntry, args))
    return std::move(err);
  if (!std::isfinite(value))
    return makeError("the loss is not finite (" + std::to_string(value) + ")");
  return value;
}

void Trainer::startMoments() {
  // A trainer that only computes gradients never holds them.
  if (!m_.empty())
    return;
  for (const std::vector<float> &p : params_) {
    m_.emplace_back(p.size(), 0.0f);
    v_.emplace_back(p.size(), 0.0f);
  }
}

Expected<StepResult>
Trainer::accumulatedStep(const std::vector<TrainingBatch> &batches,
                         double lr, StepReduction *reduction) {
  assert(!batches.empty() && "a step needs a batch");
  startMoments();
  // Each tensor starts on a cache line, as a buffer of its own would; the
  // gaps stay zero.
  size_t gradients = 0;
  if (sumOffsets_.empty())
    for (const std::vector<float> &p : params_) {
      sumOffsets_.push_back(gradients);
      gradients += (p.size() + 15) / 16 * 16;
    }
  else
    gradients = sumOffsets_.back() + (params_.back().size() + 15) / 16 * 16;
  // After the gradients: the loss (as two floats, high and low part, so
  // the sum keeps double's precision), then the extra values.
  size_t extra = reduction ? reduction->extra.size() : 0;
  sum_.resize(gradients + 2 + extra, 0.0f);
  double lossSum = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    auto loss = computeGradients(batches[b]);
    if (!loss)
      return makeError("step " + std::to_string(steps_ + 1) + ": " +
                       loss.takeError().message());
    lossSum += *loss;
    for (size_t i = 0; i < grads_.size(); ++i) {
      float *sum = sum_.data() + sumOffsets_[i];
      const float *g = grads_[i].data();
      if (b == 0)
        std::copy(g, g + grads_[i].size(), sum);
      else
        for (size_t j = 0; j < grads_[i].size(); ++j)
          sum[j] += g[j];
    }
  }
  // Each batch's loss is a mean over its tokens, and the batches (on every
  // rank) are the same size: the whole step's gradient is the mean of
  // theirs.
  int ranks = 1;
  if (reduction) {
    ranks = reduction->ranks;
    sum_[gradients] = float(lossSum);
    sum_[gradients + 1] = float(lossSum - double(sum_[gradients]));
    std::copy(reduction->extra.begin(), reduction->extra.end(),
              sum_.begin() + ptrdiff_t(gradients + 2));
    if (Error err = reduction->sum(sum_.data(), sum_.size()))
      return makeError("step " + std::to_string(steps_ + 1) + ": " +
                       err.message());
    reduction->reduced = true;
    std::copy(sum_.begin() + ptrdiff_t(gradients + 2), sum_.end(),
              reduction->extra.begin());
    lossSum = double(sum_[gradients]) + double(sum_[gradients + 1]);
  }
  double count = double(batches.size()) * double(ranks);
  float scale = float(1.0 / count);
  for (size_t j = 0; j < gradients; ++j)
    sum_[j] *= scale;
  float lrValue = float(lr), t = float(steps_ + 1);
  StepResult result;
  result.loss = float(lossSum / count);
  std::vector<TensorRef> args;
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({params_[i].data(), specs_[i].shape});
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({sum_.data() + sumOffsets_[i], specs_[i].shape});
  for (auto *state : {&m_, &v_})
    for (size_t i = 0; i < specs_.size(); ++i)
      args.push_back({(*state)[i].data(), specs_[i].shape});
  args.push_back({&lrValue, {}});
  args.push_back({&t, {}});
  args.push_back({&result.gradNorm, {}});
  for (auto *state : {&params_, &m_, &v_})
    for (size_t i = 0; i < specs_.size(); ++i)
      args.push_back({(*state)[i].data(), specs_[i].shape});
  if (Error err = program_->call(kApplyStepEntry, args))
    return std::move(err);
  ++steps_;
  if (!std::isfinite(result.gradNorm))
    return makeError("step " + std::to_string(steps_) +
                     ": the gradient norm is not finite (" +
                     std::to_string(result.gradNorm) + ")");
  return result;
}

Expected<StepResult> Trainer::step(const TrainingBatch &batch, double lr) {
  startMoments();
  // Parameters and moments are updated in place: each buffer is both an
  // input and an output of the entry, never copied.
  float lrValue = float(lr), t = float(steps_ + 1);
  StepResult result;
  std::vector<TensorRef> args = inputs(batch);
  for (auto *state : {&m_, &v_})
    for (size_t i = 0; i < specs_.size(); ++i)
      args.push_back({(*state)[i].data(), specs_[i].shape});
  args.push_back({&lrValue, {}});
  args.push_back({&t, {}});
  args.push_back({&result.loss, {}});
  args.push_back({&result.gradNorm, {}});
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({grads_[i].data(), specs_[i].shape});
  for (auto *state : {&params_, &m_, &v_})
    for (size_t i = 0; i < specs_.size(); ++i)
      args.push_back({(*state)[i].data(), specs_[i].shape});
  if (Error err = program_->call(kTrainStepEntry, args))
    return std::move(err);
  ++steps_;
  // A finite norm (its squares summed in f64, which no f32 overflows)
  // means every gradient is: only then is scanning them skipped.
  if (std::isfinite(result.loss) && std::isfinite(result.gradNorm))
    return result;
  if (Error err = checkFinite(result.loss))
    return makeError("step " + std::to_string(steps_) + ": " + err.message());
  return makeError("step " + std::to_string(steps_) +
                   ": the gradient norm is not finite (" +
                   std::to_string(result.gradNorm) + ")");
}

} // namespace tlm::runtime
