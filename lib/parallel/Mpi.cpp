//===- Mpi.cpp - the ranks of an MPI world ----------------------------------===//
//
// Sums are MPI_Iallreduce, gathers MPI_Iallgather, each waited for with
// MPI_Test until the timeout: a blocking MPI call cannot be bounded.
//
//===----------------------------------------------------------------------===//

#include "lib/parallel/Communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <string>
#include <thread>

namespace tlm::parallel {

namespace {

std::string mpiMessage(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, size_t(length));
}

class MpiWorld final : public Communicator {
public:
  MpiWorld(int rank, int size, int localSize, double timeoutSeconds)
      : Communicator(rank, size, localSize, timeoutSeconds) {}

  Error sum(float *data, size_t n) override {
    return inChunks(data, n, MPI_FLOAT);
  }
  Error sum(double *data, size_t n) override {
    return inChunks(data, n, MPI_DOUBLE);
  }

  Error gather(const uint64_t *values, size_t n,
               std::vector<uint64_t> &all) override {
    assert(n <= size_t(INT_MAX) / size_t(size_) && "a gather that small");
    all.assign(n * size_t(size_), 0);
    MPI_Request request;
    int rc = MPI_Iallgather(values, int(n), MPI_UINT64_T, all.data(), int(n),
                            MPI_UINT64_T, MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS)
      return makeError("MPI_Iallgather: " + mpiMessage(rc));
    return wait(request, "a gather");
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  void finish() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }

private:
  /// MPI counts are ints: a larger buffer is summed a part at a time.
  template <typename T>
  Error inChunks(T *data, size_t n, MPI_Datatype type) {
    constexpr size_t kChunk = size_t(1) << 30;
    for (size_t done = 0; done < n; done += kChunk) {
      int count = int(std::min(kChunk, n - done));
      MPI_Request request;
      int rc = MPI_Iallreduce(MPI_IN_PLACE, data + done, count, type, MPI_SUM,
                              MPI_COMM_WORLD, &request);
      if (rc != MPI_SUCCESS)
        return makeError("MPI_Iallreduce: " + mpiMessage(rc));
      if (Error err = wait(request, "a sum across the ranks"))
        return err;
    }
    return Error::success();
  }

  /// Polls `request` until it completes: busily for the first millisecond
  /// (a sum of the gradients ends in about that), then every 100 us, which
  /// leaves the core to other ranks' threads. Past the timeout, this rank
  /// says so and brings the job down.
  Error wait(MPI_Request &request, const char *what) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point start = Clock::now();
    for (;;) {
      int done = 0;
      int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        return makeError(std::string(what) + ": " + mpiMessage(rc));
      if (done)
        return Error::success();
      double waited =
          std::chrono::duration<double>(Clock::now() - start).count();
      if (waited > timeout()) {
        // Fatal here and now: the request is still pending, and MPI would
        // write into the caller's buffer should the others come after it
        // is freed.
        std::fflush(stdout);
        std::fprintf(stderr,
                     "error: rank %d: %s waited %d s for the other ranks "
                     "(--rank-timeout): one of them is stuck or gone\n",
                     rank_, what, int(timeout()));
        abort(1);
      }
      if (waited > 1e-3)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

} // namespace

Expected<std::unique_ptr<Communicator>> detail::openMpi(double timeoutSeconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; OpenMP's threads never do.
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return makeError("MPI_Init: " + mpiMessage(rc));
    if (provided < MPI_THREAD_FUNNELED)
      return makeError("this MPI cannot run in a process with threads of its "
                       "own (MPI_THREAD_FUNNELED), which tlm's OpenMP loops "
                       "are");
  }
  // A failed call returns its error to us, which reports it naming the
  // rank, instead of MPI's default of aborting without a word of ours.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1, localSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // A launcher that started several processes which each came up alone
  // (srun without PMI support, another MPI's mpirun) would have every one
  // train as rank 0 of 1 into the same folder.
  if (launchedRanks() > 1 && size != launchedRanks())
    return makeError("the launcher started " + std::to_string(launchedRanks()) +
                     " processes but MPI sees a world of " +
                     std::to_string(size) +
                     " (start the ranks with this MPI's mpirun, or srun with "
                     "its PMI: srun --mpi=pmix)");
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                          MPI_INFO_NULL, &local) == MPI_SUCCESS) {
    MPI_Comm_size(local, &localSize);
    MPI_Comm_free(&local);
  }
  return std::unique_ptr<Communicator>(
      new MpiWorld(rank, size, localSize, timeoutSeconds));
}

} // namespace tlm::parallel
