//===- TrainRanks.cpp - tlm-run train's data-parallel pieces --------------===//

#include "tools/tlm-run/TrainRanks.h"

#include "lib/support/Checksum.h"

#include "llvm/Support/Signals.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace tlm::cli {

namespace {

/// A 64-bit checksum of each parameter's bytes, to compare the ranks'.
std::vector<uint64_t> checksums(const runtime::Trainer &trainer) {
  std::vector<uint64_t> sums;
  for (const std::vector<float> &p : trainer.parameters()) {
    Checksum sum;
    sum.add(p.data(), p.size() * sizeof(float));
    sums.push_back(sum.value());
  }
  return sums;
}

void writeLine(void *text) {
  const char *line = static_cast<const char *>(text);
  ssize_t written = ::write(2, line, std::strlen(line));
  (void)written;
}

} // namespace

runtime::TrainingBatch shareOf(runtime::TrainingBatch batch, int rank,
                               int ranks) {
  if (ranks == 1)
    return batch;
  runtime::TrainingBatch share;
  share.seq = batch.seq;
  share.batch = batch.batch / ranks;
  for (int64_t row = rank; row < batch.batch; row += ranks) {
    auto from = [&](const std::vector<int64_t> &ids) {
      return ids.begin() + ptrdiff_t(row * batch.seq);
    };
    share.inputs.insert(share.inputs.end(), from(batch.inputs),
                        from(batch.inputs) + ptrdiff_t(batch.seq));
    share.targets.insert(share.targets.end(), from(batch.targets),
                         from(batch.targets) + ptrdiff_t(batch.seq));
  }
  return share;
}

Expected<double> validationLoss(runtime::Trainer &trainer,
                                const std::vector<runtime::TrainingBatch> &batches,
                                parallel::Communicator &comm) {
  double sum = 0;
  for (const runtime::TrainingBatch &b : batches) {
    auto loss = trainer.loss(b);
    if (!loss)
      return makeError("the validation loss: " + loss.takeError().message());
    sum += *loss;
  }
  if (Error err = comm.sum(&sum, 1))
    return makeError("the validation loss: " + err.message());
  return sum / double(batches.size() * size_t(comm.size()));
}

Error compareRanks(const runtime::Trainer &trainer,
                   parallel::Communicator &comm, int64_t step) {
  if (comm.size() == 1)
    return Error::success();
  std::vector<uint64_t> mine = checksums(trainer), all;
  if (Error err = comm.gather(mine.data(), mine.size(), all))
    return makeError("comparing the ranks' parameters: " + err.message());
  size_t n = mine.size();
  for (size_t i = 0; i < n; ++i)
    for (int r = 1; r < comm.size(); ++r)
      if (all[size_t(r) * n + i] != all[i])
        return comm.shared(Error::withExitCode(
            2, "after step " + std::to_string(step) + ", the parameters of "
                   "rank " + std::to_string(r) + " differ from rank 0's, "
                   "first in " + trainer.specs()[i].name +
                   " (the ranks diverged: their updates must be identical)"));
  return Error::success();
}

void sayCrashesAsRank(const parallel::Communicator &comm) {
  if (comm.size() == 1)
    return;
  // Written from a signal handler: made now, whole.
  static std::string line;
  line = "error: rank " + std::to_string(comm.rank()) +
         ": killed by a fatal signal; the job ends\n";
  llvm::sys::AddSignalHandler(writeLine, line.data());
}

TestFault TestFault::fromEnvironment() {
  TestFault fault;
  const char *text = std::getenv("TLM_TEST_RANK_FAULT");
  if (!text)
    return fault;
  std::string spec = text;
  size_t colon = spec.find(':');
  if (colon == spec.npos)
    return fault;
  fault.rank = std::atoi(spec.substr(0, colon).c_str());
  std::string kind = spec.substr(colon + 1);
  fault.kind = kind == "perturb" ? Perturb
               : kind == "fail"  ? Fail
               : kind == "stall" ? Stall
               : kind == "crash" ? Crash
                                 : None;
  return fault;
}

Error TestFault::inject(runtime::Trainer &trainer) const {
  switch (kind) {
  case Perturb:
    // The last parameter: the check must name the tensor, not the first.
    trainer.nudgeForTest(trainer.specs().size() - 1);
    return Error::success();
  case Fail:
    return makeError("a test fault (TLM_TEST_RANK_FAULT)");
  case Stall:
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
  case Crash:
    std::raise(SIGSEGV);
    return Error::success();
  case None:
    return Error::success();
  }
  return Error::success();
}

} // namespace tlm::cli
