//===- Training.h - a compiled training step and its buffers ----*- C++ -*-===//
//
// The runtime side of training: a Program holding `grad_step` or
// `train_step` (built by the compiler's compileTrainingProgram,
// TrainCompile.h), the parameters it trains (f32, owned here), their
// gradients and AdamW's moments. The entries' ABI
// (docs/training.md#the-entry-abi):
//   grad_step(ids (B, T), targets (B, T) int64, params...)
//     -> (loss, grads...)
//   train_step(ids, targets, params..., m..., v..., lr, step)
//     -> (loss, norm, grads..., params'..., m'..., v'...)
// with the parameters in model::weightSpecs order, lr, step, loss and norm
// 0-d f32. train_step's parameters and moments are updated in place: their
// input and output buffers are the same.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_TRAINING_H
#define TLM_RUNTIME_TRAINING_H

#include "lib/io/TokenFile.h"
#include "lib/model/Config.h"
#include "lib/model/Weights.h"
#include "lib/runtime/Program.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tlm::runtime {

/// The entries of a compiled training program: the gradients alone, or
/// the whole step with clipping and AdamW.
inline constexpr const char *kGradStepEntry = "grad_step";
inline constexpr const char *kTrainStepEntry = "train_step";
/// Clipping and AdamW alone, on gradients given (TrainingShape::
/// separateUpdate):
///   apply_step(params..., grads..., m..., v..., lr, step)
///     -> (norm, params'..., m'..., v'...)
inline constexpr const char *kApplyStepEntry = "apply_step";
/// The forward's mean loss alone (TrainingShape::withLoss):
///   loss(ids, targets, params...) -> loss
inline constexpr const char *kLossEntry = "loss";

/// AdamW and clipping (tlm-build-train-step's options): CS336's Algorithm 1
/// by default.
struct OptimizerOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  /// Clip the gradients' global L2 norm to this; 0: no clipping.
  double maxNorm = 1.0;
  /// PyTorch's form of AdamW instead of CS336's.
  bool torchForm = false;
  /// Decay 1-D parameters (norm gains) too.
  bool decayVectors = true;
};

/// What one step of train_step reports.
struct StepResult {
  float loss = 0;
  /// The gradients' global L2 norm before clipping.
  float gradNorm = 0;
};

/// A token matrix `(batch, seq + 1)` as the step reads it: inputs
/// `[:, :-1]` and targets `[:, 1:]`, each (batch, seq).
struct TrainingBatch {
  std::vector<int64_t> inputs, targets;
  int64_t batch = 0, seq = 0;
};

/// What a training run holds, bytes (docs/training.md#memory): the
/// parameters, their gradients and (with the optimizer) AdamW's two
/// moments, all f32, and the activations of one step.
struct TrainingMemory {
  double parameters = 0, gradients = 0, moments = 0, activations = 0;
  double total() const {
    return parameters + gradients + moments + activations;
  }
  /// "parameters 90.4 MB, gradients ..., activations ..." (decimal MB, as
  /// the memory limits are given; `mebibytes`: in MiB, as RSS is).
  std::string parts(bool mebibytes = false) const;
};

/// The estimate for `batch` rows of `seq` tokens. Activations: per token
/// and layer, the forward values the backward reads (the block's input,
/// both norms' outputs, Q, K, V and the rotated Q and K, the attention
/// output, the residual, the FFN's W1·x, W3·x and its gate product), then
/// per token the logits and their gradient, and the largest layer's
/// gradients in flight; one head's (T, T) scores and their gradient; all
/// twice, for the backward's workspace (as measured, Training.cpp).
TrainingMemory trainingMemory(const model::Config &config, int64_t batch,
                              int64_t seq, bool optimizer);

/// An error naming each part when `memory` cannot fit in what the process
/// may take (model::memoryShortfall).
Error checkTrainingMemory(const TrainingMemory &memory);

/// Splits `tokens` into inputs and targets; an error names what is wrong:
/// fewer than 2 tokens a row, more than context_length + 1, or an id
/// outside [0, vocab_size) (with its row and column).
Expected<TrainingBatch> splitTokens(const io::TokenMatrix &tokens,
                                    const model::Config &config);

/// The sum across the ranks of a data-parallel step (lib/parallel).
struct StepReduction {
  /// Adds every rank's `data` in place: the same sums on every rank.
  std::function<Error(float *data, size_t n)> sum;
  int ranks = 1;
  /// Values summed along in the same call (a request to stop): this rank's
  /// in, the ranks' sums out.
  std::vector<float> extra;
  /// Set once the sum is done: a failure after it (a norm that is not
  /// finite) is every rank's alike.
  bool reduced = false;
};

class Trainer {
public:
  /// `program` holds `train_step` for `config`, whose weights must be f32
  /// (training's only dtype: an error says so otherwise); the parameters
  /// start as a copy of `initial`.
  static Expected<std::unique_ptr<Trainer>>
  create(const model::Config &config, std::unique_ptr<Program> program,
         const model::Weights &initial);

  /// The mean loss of `batch`, and every parameter's gradient into
  /// gradients() (grad_step). A NaN or Inf loss or gradient is an error
  /// naming the first tensor that holds one.
  Expected<float> computeGradients(const TrainingBatch &batch);

  /// One optimizer step on `batch` with learning rate `lr` (train_step):
  /// the gradients, clipped, then AdamW on every parameter and moment in
  /// place. A NaN or Inf loss or gradient is an error naming the step and
  /// the first tensor that holds one; the parameters, updated in place by
  /// that step, are then not to be used.
  Expected<StepResult> step(const TrainingBatch &batch, double lr);
  /// One optimizer step over several batches (gradient accumulation): the
  /// gradients of each (grad_step), averaged, then clipping and AdamW
  /// (apply_step); the loss reported is the batches' mean. The program
  /// must hold both entries (TrainingShape::separateUpdate). With
  /// `reduction` (data parallelism), the summed gradients and loss are
  /// summed across the ranks in one call before the average, so every rank
  /// clips by the global norm and applies the same update.
  Expected<StepResult> accumulatedStep(const std::vector<TrainingBatch> &batches,
                                       double lr,
                                       StepReduction *reduction = nullptr);
  /// The mean loss of `batch` at the current parameters, no gradient (the
  /// program must hold kLossEntry). A NaN or Inf loss is an error.
  Expected<float> loss(const TrainingBatch &batch);
  /// Steps taken so far.
  int64_t stepsTaken() const { return steps_; }

  const std::vector<std::vector<float>> &parameters() const { return params_; }
  /// AdamW's moments (empty before the first step, which starts them at
  /// zero).
  const std::vector<std::vector<float>> &firstMoments() const { return m_; }
  const std::vector<std::vector<float>> &secondMoments() const { return v_; }
  /// Continues a run from a checkpoint: its moments (each the size of its
  /// parameter) and the steps it had taken; the parameters are the
  /// trainer's initial weights.
  Error restore(std::vector<std::vector<float>> m,
                std::vector<std::vector<float>> v, int64_t steps);
  const std::vector<std::vector<float>> &gradients() const { return grads_; }
  /// The data-parallel divergence check's test hook: moves the first value
  /// of parameter `index` by one ulp, as a rank whose update went astray.
  void nudgeForTest(size_t index) {
    float &x = params_[index][0];
    x = std::nextafter(x, INFINITY);
  }
  const std::vector<model::WeightSpec> &specs() const { return specs_; }
  const Program &program() const { return *program_; }

private:
  Trainer() = default;
  model::Config config_;
  std::unique_ptr<Program> program_;
  std::vector<model::WeightSpec> specs_;
  /// The first tensor (the loss, or a gradient) holding a NaN or Inf.
  Error checkFinite(float loss) const;
  /// ids, targets, then every parameter.
  std::vector<TensorRef> inputs(const TrainingBatch &batch);

  std::vector<std::vector<float>> params_, grads_, m_, v_;
  /// The gradients summed over an accumulated step's batches, one buffer
  /// (one sum across ranks), tensor i at sumOffsets_[i]; after them the
  /// loss and StepReduction::extra (accumulatedStep).
  std::vector<float> sum_;
  std::vector<size_t> sumOffsets_;
  /// Zero moments before step 1 (CS336's Algorithm 1).
  void startMoments();
  std::vector<int64_t> ids_, targets_;
  int64_t steps_ = 0;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_TRAINING_H
