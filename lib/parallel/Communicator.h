//===- Communicator.h - the ranks of a data-parallel run --------*- C++ -*-===//
//
// What `mpirun -np N tlm-run train` needs of MPI, behind one interface: the
// rank and the number of ranks, sums across them, a gather, and bringing
// every rank down. Alone (no launcher, or one rank) it is a single process
// and every collective is the identity. Built without MPI, a process a
// launcher started as one of several is refused in one line.
//
// Every collective is bounded: a rank that waits longer than the timeout
// for the others (one of them stuck, or gone without the launcher noticing)
// says so, naming itself, and brings the job down instead of hanging.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PARALLEL_COMMUNICATOR_H
#define TLM_PARALLEL_COMMUNICATOR_H

#include "lib/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tlm::parallel {

class Communicator {
public:
  virtual ~Communicator() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// The ranks on this machine (which share its cores).
  int localSize() const { return localSize_; }

  /// Sums `data` across the ranks in place; every rank gets the same sums.
  virtual Error sum(float *data, size_t n) = 0;
  virtual Error sum(double *data, size_t n) = 0;
  /// Every rank's `n` values, rank 0's first, into `all` (size() * n).
  virtual Error gather(const uint64_t *values, size_t n,
                       std::vector<uint64_t> &all) = 0;
  /// Ends every rank's process with `code` (MPI_Abort); alone, exits.
  [[noreturn]] virtual void abort(int code) = 0;
  /// The end of the run: MPI_Finalize. Collectives fail after it.
  virtual void finish() {}

  /// Ends a run that returned `err`. Alone: finishes and returns it, for
  /// the caller to report. Several ranks and success: finishes and returns
  /// success. A failure every rank met at the same point (agree(), or a
  /// marked shared()): the chosen rank says it with `report` (naming
  /// itself unless rank 0), all ranks meet once more so the line is out
  /// before any exits, then each exits with its code. A failure of this
  /// rank alone: says it, naming the rank, and brings every rank down
  /// (abort). `report` prints an error as the tool does.
  Error end(Error err, int (*report)(const Error &));

  /// A collective on each rank's `local` outcome of the same phase (setup):
  /// success when every rank succeeded; else a failure on every rank, which
  /// the lowest failing rank reports (end()) and every rank exits with its
  /// code.
  Error agree(Error local);

  /// `err` (a failure) is met by every rank at the same point (they all
  /// computed it from the same collective's result): rank 0 reports it.
  Error shared(Error err);

protected:
  Communicator(int rank, int size, int localSize, double timeoutSeconds)
      : rank_(rank), size_(size), localSize_(localSize),
        timeoutSeconds_(timeoutSeconds) {}
  /// How long a collective may wait: the timeout, or during agree() (whose
  /// ranks may arrive a compile apart) at least kSetupSeconds.
  double timeout() const {
    return agreeing_ && timeoutSeconds_ < kSetupSeconds ? kSetupSeconds
                                                        : timeoutSeconds_;
  }
  static constexpr double kSetupSeconds = 600;
  int rank_, size_, localSize_;
  double timeoutSeconds_;
  bool agreeing_ = false;

private:
  /// With several ranks, the rank that reports a failure every rank has
  /// (agree(), shared()); -1 when the failure is this rank's alone.
  int reporter_ = -1;
};

/// How many processes a launcher (mpirun, srun, Hydra) started with this
/// one, from the environment it sets; 1 when none did.
int launchedRanks();

/// Whether this build has MPI.
bool haveMpi();

/// The ranks of this run: MPI's world when a launcher started several
/// processes (MPI_Init), else a single process. Collectives give up after
/// `timeoutSeconds`. Several ranks and a build without MPI is an error.
Expected<std::unique_ptr<Communicator>> open(double timeoutSeconds);

namespace detail {
/// The MPI world (Mpi.cpp, present when haveMpi()).
Expected<std::unique_ptr<Communicator>> openMpi(double timeoutSeconds);
} // namespace detail

} // namespace tlm::parallel

#endif // TLM_PARALLEL_COMMUNICATOR_H
