//===- Communicator.cpp - one process, and the end of a run ---------------===//

#include "lib/parallel/Communicator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tlm::parallel {

namespace {

/// A run of one process: every collective is the identity.
class SingleProcess final : public Communicator {
public:
  SingleProcess() : Communicator(0, 1, 1, 0) {}
  Error sum(float *, size_t) override { return Error::success(); }
  Error sum(double *, size_t) override { return Error::success(); }
  Error gather(const uint64_t *values, size_t n,
               std::vector<uint64_t> &all) override {
    all.assign(values, values + n);
    return Error::success();
  }
  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::_Exit(code);
  }
};

/// A positive integer in environment variable `name`, else 0.
int envCount(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  return *end == '\0' && value > 0 && value < (1 << 24) ? int(value) : 0;
}

/// Whether a launcher started this process as a rank (even of one):
/// Open MPI's mpirun, MPICH's Hydra and Intel MPI (PMI), PMIx (Open MPI 5,
/// srun --mpi=pmix), or a Slurm job step.
bool launched() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                           "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(name))
      return true;
  return false;
}

} // namespace

int launchedRanks() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (int n = envCount(name))
      return n;
  return 1;
}

bool haveMpi() {
#ifdef TLM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

Expected<std::unique_ptr<Communicator>> open(double timeoutSeconds) {
  if (!launched())
    return std::unique_ptr<Communicator>(new SingleProcess());
#ifdef TLM_HAVE_MPI
  return detail::openMpi(timeoutSeconds);
#else
  (void)timeoutSeconds;
  if (launchedRanks() == 1)
    return std::unique_ptr<Communicator>(new SingleProcess());
  return makeError("this tlm-run was built without MPI, so it cannot train as "
                   "one of " +
                   std::to_string(launchedRanks()) +
                   " ranks (install libopenmpi-dev and rebuild: "
                   "scripts/setup.sh)");
#endif
}

Error Communicator::agree(Error local) {
  if (size_ == 1)
    return local;
  // Each rank's exit code in its own slot: the sum is every rank's.
  std::vector<double> codes(size_t(size_), 0.0);
  codes[size_t(rank_)] = local ? double(local.exitCode()) : 0.0;
  agreeing_ = true;
  Error summed = sum(codes.data(), codes.size());
  agreeing_ = false;
  if (summed)
    return summed;
  for (int r = 0; r < size_; ++r) {
    if (codes[size_t(r)] == 0)
      continue;
    reporter_ = r;
    if (r == rank_)
      return local;
    return Error::withExitCode(int(codes[size_t(r)]),
                               "rank " + std::to_string(r) + " failed");
  }
  return Error::success();
}

Error Communicator::shared(Error err) {
  if (size_ > 1)
    reporter_ = 0;
  return err;
}

Error Communicator::end(Error err, int (*report)(const Error &)) {
  if (size_ == 1) {
    finish();
    return err;
  }
  if (!err) {
    finish();
    return err;
  }
  int code = err.exitCode();
  auto named = [&] {
    return rank_ == 0 ? std::move(err)
                      : Error::withExitCode(code, "rank " +
                                                      std::to_string(rank_) +
                                                      ": " + err.message());
  };
  if (reporter_ < 0) {
    // This rank's failure alone: the others are waiting at a collective
    // (or will be), so it takes them down with it.
    report(Error::withExitCode(code, "rank " + std::to_string(rank_) + ": " +
                                         err.message()));
    abort(code);
  }
  // A failure every rank has: the chosen rank says it, then all meet once
  // more before any exits (the launcher ends the job when the first rank
  // exits with an error, which could be before the line was out).
  if (reporter_ == rank_)
    report(named());
  std::fflush(stdout);
  std::fflush(stderr);
  double said = 1;
  (void)sum(&said, 1);
  finish();
  std::exit(code);
}

} // namespace tlm::parallel
