/* One sum of N floats across the ranks, as tlm-run train does it once a
 * step (lib/parallel/Mpi.cpp: MPI_Iallreduce, then MPI_Test until done) and
 * as a blocking MPI_Allreduce, which cannot be bounded by a timeout: the
 * median and best of 50 after 5 warm-up sums. bench/mpi.sh compiles it with
 * mpicc and runs it for the Shakespeare baseline's gradients.
 *
 *   mpirun -np 2 allreduce N */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kWarmup = 5, kRepeats = 50 };

static int byValue(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double once(float *data, int n, int nonBlocking) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  if (nonBlocking) {
    MPI_Request request;
    int done = 0;
    MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &request);
    while (!done)
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  } else {
    MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  return MPI_Wtime() - start;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int n = argc > 1 ? atoi(argv[1]) : 0;
  if (n <= 0) {
    if (rank == 0)
      fprintf(stderr, "usage: allreduce N (floats)\n");
    MPI_Finalize();
    return 1;
  }
  float *data = calloc((size_t)n, sizeof *data);
  for (int nonBlocking = 1; nonBlocking >= 0; --nonBlocking) {
    double times[kRepeats];
    for (int i = 0; i < kWarmup; ++i)
      once(data, n, nonBlocking);
    for (int i = 0; i < kRepeats; ++i)
      times[i] = once(data, n, nonBlocking);
    qsort(times, kRepeats, sizeof *times, byValue);
    if (rank == 0)
      printf("%s of %d floats (%.2f MB) over %d ranks: median %.3f ms, "
             "best %.3f ms\n",
             nonBlocking ? "MPI_Iallreduce + MPI_Test" : "MPI_Allreduce", n,
             n * 4.0 / 1e6, ranks, times[kRepeats / 2] * 1e3, times[0] * 1e3);
  }
  free(data);
  MPI_Finalize();
  return 0;
}
