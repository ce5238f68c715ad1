//===- TrainRanks.h - tlm-run train's data-parallel pieces -----*- C++ -*-===//
//
// What a --train-data run under `mpirun -np N` does beyond one process's
// loop (TrainLoop.cpp; docs/training.md#several-processes-mpi): each rank's
// share of a batch, the validation loss summed across the ranks, the
// ranks' parameters compared, a crash said with the rank's name, and the
// faults the tests inject.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_TLMRUN_TRAINRANKS_H
#define TLM_TOOLS_TLMRUN_TRAINRANKS_H

#include "lib/parallel/Communicator.h"
#include "lib/runtime/Training.h"

#include <vector>

namespace tlm::cli {

/// Rows `rank`, `rank + ranks`, ... of `batch`: a rank's share.
runtime::TrainingBatch shareOf(runtime::TrainingBatch batch, int rank,
                               int ranks);

/// The mean loss over `batches` (this rank's shares) at the trainer's
/// current parameters, summed across the ranks: every share is the same
/// size, so the mean of all shares is the mean over the whole batches.
Expected<double> validationLoss(runtime::Trainer &trainer,
                                const std::vector<runtime::TrainingBatch> &batches,
                                parallel::Communicator &comm);

/// An error naming the first tensor and rank whose parameters differ from
/// rank 0's after step `step` (a checksum of each tensor, gathered). Every
/// rank computes the same verdict: it is marked shared.
Error compareRanks(const runtime::Trainer &trainer,
                   parallel::Communicator &comm, int64_t step);

/// Under several ranks, a fatal signal prints "error: rank R: killed by a
/// fatal signal" before mpirun ends the job (its own note names no cause
/// of ours).
void sayCrashesAsRank(const parallel::Communicator &comm);

/// What a rank does wrong in the data-parallel tests, after its first step
/// (TLM_TEST_RANK_FAULT=RANK:KIND; tests/tlm-run/train-mpi-faults.test).
struct TestFault {
  enum Kind { None, Perturb, Fail, Stall, Crash } kind = None;
  int rank = -1;
  static TestFault fromEnvironment();
  /// Does it to `trainer` (Perturb), or fails, stalls or crashes.
  Error inject(runtime::Trainer &trainer) const;
};

} // namespace tlm::cli

#endif // TLM_TOOLS_TLMRUN_TRAINRANKS_H
