//===- Training.h - a compiled training step and its buffers ----*- C++ -*-===//
//
// The runtime side of training: a Program holding `train_step` (built by
// the compiler's compileTrainingProgram, TrainCompile.h), the parameters it
// trains (f32, owned here) and their gradients. The step's ABI
// (docs/training.md#the-entry-abi): inputs `ids (B, T)` and `targets (B, T)`
// (int64), then every parameter in model::weightSpecs order; outputs the
// loss (a 0-d f32) then one gradient per parameter, in the same order.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_TRAINING_H
#define TLM_RUNTIME_TRAINING_H

#include "lib/io/TokenFile.h"
#include "lib/model/Config.h"
#include "lib/model/Weights.h"
#include "lib/runtime/Program.h"

#include <memory>
#include <string>
#include <vector>

namespace tlm::runtime {

/// The entry of a compiled training step.
inline constexpr const char *kTrainStepEntry = "train_step";

/// A token matrix `(batch, seq + 1)` as the step reads it: inputs
/// `[:, :-1]` and targets `[:, 1:]`, each (batch, seq).
struct TrainingBatch {
  std::vector<int64_t> inputs, targets;
  int64_t batch = 0, seq = 0;
};

/// Splits `tokens` into inputs and targets; an error names what is wrong:
/// fewer than 2 tokens a row, more than context_length + 1, or an id
/// outside [0, vocab_size) (with its row and column).
Expected<TrainingBatch> splitTokens(const io::TokenMatrix &tokens,
                                    const model::Config &config);

class Trainer {
public:
  /// `program` holds `train_step` for `config`, whose weights must be f32
  /// (training's only dtype: an error says so otherwise); the parameters
  /// start as a copy of `initial`.
  static Expected<std::unique_ptr<Trainer>>
  create(const model::Config &config, std::unique_ptr<Program> program,
         const model::Weights &initial);

  /// The mean loss of `batch`, and every parameter's gradient into
  /// gradients(). A NaN or Inf loss or gradient is an error naming the
  /// first tensor that holds one.
  Expected<float> computeGradients(const TrainingBatch &batch);

  const std::vector<std::vector<float>> &parameters() const { return params_; }
  const std::vector<std::vector<float>> &gradients() const { return grads_; }
  const std::vector<model::WeightSpec> &specs() const { return specs_; }
  const Program &program() const { return *program_; }

private:
  Trainer() = default;
  model::Config config_;
  std::unique_ptr<Program> program_;
  std::vector<model::WeightSpec> specs_;
  std::vector<std::vector<float>> params_, grads_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_TRAINING_H
