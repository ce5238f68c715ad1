// The machine's own ceilings for bench/compare.sh: f32 FMA throughput and
// read bandwidth, on 1 and on all OpenMP threads. Built with
// clang -O3 -march=native -fopenmp; prints one JSON line.
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// The host's widest f32 vector (-march=native): 12 chains of them plus two
// operands must fit its registers (AVX2's 16 could not hold 12 of 16
// lanes: the probe spilled and read half the peak).
#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX__)
#define LANES 8
#else
#define LANES 4
#endif
typedef float vf __attribute__((vector_size(LANES * 4)));

// c * a + b as one fused instruction, whatever the compiler's contraction
// rules (with `c * a + b` the probe measured what each compiler made of it).
#if defined(__AVX512F__)
#define FMA(c, a, b) ((vf)_mm512_fmadd_ps((__m512)(c), (__m512)(a), (__m512)(b)))
#elif defined(__FMA__)
#define FMA(c, a, b) ((vf)_mm256_fmadd_ps((__m256)(c), (__m256)(a), (__m256)(b)))
#else
#error "the FMA probe needs FMA instructions (build with -march=native)"
#endif

// 12 independent chains of vector FMAs per thread: enough to hide the FMA
// latency on two pipes. Returns GFLOP/s over `threads` threads.
static double fmaPeak(int threads) {
  const long iters = 200 * 1000 * 1000;
  double start = now();
  float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    vf a = {0}, b = {0};
    for (int l = 0; l < LANES; ++l)
      a[l] = 0.999f, b[l] = 1e-3f;
    // Hidden from the optimizer: with a known `a` (it was exactly 1.0f
    // here) the compilers turned the FMAs into adds, or folded the chains.
    __asm__ volatile("" : "+v"(a), "+v"(b));
    // Each chain starts elsewhere: twelve chains from one value compute one
    // value, and the compilers merged them into a single chain.
    vf c0 = b, c1 = b + 1, c2 = b + 2, c3 = b + 3, c4 = b + 4, c5 = b + 5,
       c6 = b + 6, c7 = b + 7, c8 = b + 8, c9 = b + 9, c10 = b + 10,
       c11 = b + 11;
    for (long i = 0; i < iters; ++i) {
      c0 = FMA(c0, a, b), c1 = FMA(c1, a, b), c2 = FMA(c2, a, b);
      c3 = FMA(c3, a, b), c4 = FMA(c4, a, b), c5 = FMA(c5, a, b);
      c6 = FMA(c6, a, b), c7 = FMA(c7, a, b), c8 = FMA(c8, a, b);
      c9 = FMA(c9, a, b), c10 = FMA(c10, a, b), c11 = FMA(c11, a, b);
    }
    vf s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
    for (int l = 0; l < LANES; ++l)
      sink += s[l];
  }
  double t = now() - start;
  if (sink == 12345.0f)
    printf("#");
  return 2.0 * 12 * LANES * iters * threads / t / 1e9;
}

// Sums a 1 GiB array (far beyond the caches) a few times: GB/s read.
static double readBandwidth(int threads, const float *data, long n) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double start = now();
    float sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      // Four vector accumulators: the adds need no reassociation flags.
      vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
      const vf *v = (const vf *)data;
#pragma omp for
      for (long i = 0; i < n / (4 * LANES); ++i) {
        s0 += v[4 * i], s1 += v[4 * i + 1];
        s2 += v[4 * i + 2], s3 += v[4 * i + 3];
      }
      vf t = s0 + s1 + s2 + s3;
      for (int l = 0; l < LANES; ++l)
        sum += t[l];
    }
    double t = now() - start;
    if (sum == 12345.0f)
      printf("#");
    double gbs = n * 4.0 / t / 1e9;
    if (gbs > best)
      best = gbs;
  }
  return best;
}

int main(void) {
  int all = omp_get_num_procs();
  long n = (1L << 30) / 4;
  // On huge pages where the kernel gives them (THP in madvise mode), as
  // tlm's weights and KV cache are: with 4 KiB pages this loop read 14-15
  // GB/s on 1 thread of a Zen 3 EPYC, with 2 MiB pages 17-20.
  float *data = aligned_alloc(2 << 20, n * sizeof(float));
#ifdef MADV_HUGEPAGE
  madvise(data, n * sizeof(float), MADV_HUGEPAGE);
#endif
  for (long i = 0; i < n; ++i)
    data[i] = 1e-9f;
  printf("{\"fma_gflops_1\": %.1f, \"fma_gflops_all\": %.1f, "
         "\"read_gbs_1\": %.1f, \"read_gbs_all\": %.1f, \"threads_all\": %d}\n",
         fmaPeak(1), fmaPeak(all), readBandwidth(1, data, n),
         readBandwidth(all, data, n), all);
  free(data);
  return 0;
}
