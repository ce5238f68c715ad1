//===- Checkpoint.h - a training run's saved state -------------*- C++ -*-===//
//
// A checkpoint is a folder (docs/training.md#runs-and-checkpoints):
//   model.safetensors      the parameters under the model's weight names, a
//                          weights file generate, eval, quantize and
//                          compile load as they are
//   optimizer.safetensors  AdamW's moments, `m.<name>` and `v.<name>`
//   state.json             the steps taken, the batch generator's state,
//                          the config, the training arguments
// written under a temporary name and renamed into place, so a crash, a
// full disk or a signal leaves either the whole checkpoint or none.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_CHECKPOINT_H
#define TLM_RUNTIME_CHECKPOINT_H

#include "lib/runtime/Training.h"
#include "lib/support/Json.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tlm::runtime {

/// What state.json holds.
struct CheckpointState {
  int64_t step = 0;
  /// The batch sampler's SplitMix64 state.
  uint64_t rng = 0;
  /// Seconds of training so far (across resumes): metrics' time_s goes on
  /// from it.
  double seconds = 0;
  /// model::configToJson's text, parsed.
  json::Value config = json::Value::object();
  /// The flags the run was started with.
  json::Value args = json::Value::object();
};

/// Writes the checkpoint folder `dir` whole or not at all (replacing one
/// already there).
Error writeCheckpoint(const std::string &dir, const Trainer &trainer,
                      const CheckpointState &state);

/// A checkpoint read back: its state and moments (model.safetensors is
/// read as the run's --weights).
struct Checkpoint {
  CheckpointState state;
  std::vector<std::vector<float>> m, v;
};

/// Reads `dir`'s state.json and optimizer.safetensors for a model of
/// `specs`; errors name the file and what is missing or wrong.
Expected<Checkpoint> readCheckpoint(const std::string &dir,
                                    const std::vector<model::WeightSpec> &specs);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_CHECKPOINT_H
