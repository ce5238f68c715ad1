//===- Training.cpp - a compiled training step and its buffers ------------===//

#include "lib/runtime/Training.h"

#include <cmath>
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

Expected<float> Trainer::computeGradients(const TrainingBatch &batch) {
  std::vector<int64_t> inputs = batch.inputs, targets = batch.targets;
  float loss = 0;
  std::vector<TensorRef> args{{inputs.data(), {batch.batch, batch.seq}},
                              {targets.data(), {batch.batch, batch.seq}}};
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({params_[i].data(), specs_[i].shape});
  args.push_back({&loss, {}});
  for (size_t i = 0; i < specs_.size(); ++i)
    args.push_back({grads_[i].data(), specs_[i].shape});
  if (Error err = program_->call(kTrainStepEntry, args))
    return std::move(err);
  if (!std::isfinite(loss))
    return makeError("the loss is not finite (" + std::to_string(loss) +
                     "): the weights or the learning rate diverged");
  for (size_t i = 0; i < specs_.size(); ++i)
    for (float g : grads_[i])
      if (!std::isfinite(g))
        return makeError("the gradient of " + specs_[i].name +
                         " is not finite (" + std::to_string(g) + ")");
  return loss;
}

} // namespace tlm::runtime
