//===- gemm.cpp - one projection's GFLOP/s through the tlm JIT ------------===//
//
// tlm-run bench times whole prefills, whose FLOP rate mixes the projections
// with attention, norms and the rest. This times the projections alone: a
// module of one `tlm.linear` (x: 1 x M x K, W: N x K, as the model's
// projections; no norm folded in, no epilogue), compiled by the same
// pipeline as the model, called on seeded data. One JSON line per shape:
//
//   tlm-gemm-bench [--threads T] [--m M] [--reps R] [--lanes L] KxN...
//
// Benchmark only: it asserts nothing about speed (it does check sampled
// outputs, and fails on a wrong one).
//
//===----------------------------------------------------------------------===//

#include "lib/compiler/Jit.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <malloc.h>
#include <random>
#include <string>
#include <vector>

using namespace tlm;

namespace {

int threads = 1;
int64_t rows = 512;
int reps = 20;
int64_t lanes = 0; // the host's
/// The projection is a private, never-inlined function called by the
/// entry, as the model's block is: the JIT compiles its entries' bodies
/// (descriptor unpacking) without optimization.
std::string moduleText(int64_t k, int64_t n) {
  std::string x = "tensor<1x?x" + std::to_string(k) + "xf32>";
  std::string w =
      "tensor<" + std::to_string(n) + "x" + std::to_string(k) + "xf32>";
  std::string y = "tensor<1x?x" + std::to_string(n) + "xf32>";
  std::string signature = "(%x: " + x + ", %w: " + w + ") -> " + y;
  return "func.func private @project" + signature +
         " attributes {no_inline, passthrough = [\"noinline\"]} {\n"
         "  %y = tlm.linear %x, %w : " +
         x + ", " + w + " -> " + y + "\n  return %y : " + y +
         "\n}\n"
         "func.func @gemm" +
         signature +
         " {\n"
         "  %y = func.call @project(%x, %w) : (" +
         x + ", " + w + ") -> " + y + "\n  return %y : " + y + "\n}\n";
}

/// A zeroed float buffer on a cache-line boundary.
class AlignedFloats {
public:
  explicit AlignedFloats(int64_t n)
      : n_(n), data_(static_cast<float *>(std::aligned_alloc(
                   64, (n * sizeof(float) + 63) / 64 * 64))) {
    std::fill(begin(), end(), 0.0f);
  }
  ~AlignedFloats() { std::free(data_); }
  AlignedFloats(const AlignedFloats &) = delete;
  AlignedFloats &operator=(const AlignedFloats &) = delete;
  float *data() { return data_; }
  float *begin() { return data_; }
  float *end() { return data_ + n_; }
  float &operator[](int64_t i) { return data_[i]; }

private:
  int64_t n_;
  float *data_;
};

/// Seconds of one call over the timed reps (after two untimed ones).
struct Timing {
  double median, best;
};

/// The median and the fastest of the timed calls: on a shared host the
/// median carries the neighbours' load, the best what the code can do.
llvm::Expected<Timing> timeShape(mlir::MLIRContext &ctx, int64_t k, int64_t n) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(moduleText(k, n), &ctx);
  if (!module)
    return llvm::createStringError("cannot parse the GEMM module");
  runtime::JitOptions options;
  options.threads = threads;
  options.lanes = lanes;
  auto jit = runtime::Jit::compile(std::move(module), options);
  if (!jit)
    return jit.takeError();
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  // 64-byte aligned, as tlm-run loads weights: a vector load straddling
  // two cache lines would cost the GEMV (m = 1) a quarter of its speed.
  AlignedFloats x(rows * k), w(n * k), y(rows * n);
  for (float &v : x)
    v = uniform(rng);
  for (float &v : w)
    v = uniform(rng);
  std::vector<runtime::TensorRef> args = {
      {x.data(), {1, rows, k}}, {w.data(), {n, k}}, {y.data(), {1, rows, n}}};
  std::vector<double> seconds;
  for (int i = 0; i < reps + 2; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error err = (*jit)->call("gemm", args))
      return std::move(err);
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    if (i >= 2)
      seconds.push_back(took.count());
  }
  // A fast wrong answer is no result: sampled outputs against dot products
  // in double.
  std::uniform_int_distribution<int64_t> pickRow(0, rows - 1),
      pickCol(0, n - 1);
  for (int i = 0; i < 64; ++i) {
    int64_t r = pickRow(rng), c = pickCol(rng);
    double want = 0, scale = 0;
    for (int64_t j = 0; j < k; ++j) {
      want += double(x[r * k + j]) * w[c * k + j];
      scale += std::abs(double(x[r * k + j]) * w[c * k + j]);
    }
    if (std::abs(y[r * n + c] - want) > 1e-5 * scale + 1e-6)
      return llvm::createStringError("y[" + std::to_string(r) + ", " +
                                     std::to_string(c) +
                                     "] = " + std::to_string(y[r * n + c]) +
                                     ", expected " + std::to_string(want));
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2,
                   seconds.end());
  return Timing{seconds[seconds.size() / 2],
                *std::min_element(seconds.begin(), seconds.end())};
}

} // namespace

int main(int argc, char **argv) {
  // The heap policy tlm-run runs under (see there): the projection's result
  // is a fresh buffer each call, which would otherwise be page-faulted in.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  // Flags by hand: the libraries already register an LLVM `--threads`.
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    int64_t value = 0;
    if (arg == "--threads" || arg == "--m" || arg == "--reps" ||
        arg == "--lanes") {
      if (i + 1 >= argc || llvm::StringRef(argv[++i]).getAsInteger(10, value) ||
          value < 1) {
        llvm::errs() << "error: " << arg << " expects a positive integer\n";
        return 1;
      }
      if (arg == "--threads")
        threads = value;
      else if (arg == "--m")
        rows = value;
      else if (arg == "--lanes")
        lanes = value;
      else
        reps = value;
    } else if (arg.starts_with("-")) {
      llvm::errs() << "usage: tlm-gemm-bench [--threads T] [--m M] "
                      "[--reps R] [--lanes L] KxN...\n";
      return 1;
    } else {
      shapes.push_back(arg.str());
    }
  }
  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  for (const std::string &shape : shapes) {
    int64_t k = 0, n = 0;
    auto [kText, nText] = llvm::StringRef(shape).split('x');
    if (kText.getAsInteger(10, k) || nText.getAsInteger(10, n) || k < 1 ||
        n < 1) {
      llvm::errs() << "error: shape '" << shape << "' is not KxN\n";
      return 1;
    }
    llvm::Expected<Timing> s = timeShape(ctx, k, n);
    if (!s) {
      llvm::errs() << "error: " << llvm::toString(s.takeError()) << "\n";
      return 1;
    }
    double flops = 2.0 * rows * k * n;
    llvm::outs() << "{\"m\": " << rows << ", \"k\": " << k << ", \"n\": " << n
                 << ", \"threads\": " << threads
                 << ", \"ms\": " << llvm::format("%.3f", s->median * 1e3)
                 << ", \"gflops\": "
                 << llvm::format("%.1f", flops / s->median / 1e9)
                 << ", \"best_ms\": " << llvm::format("%.3f", s->best * 1e3)
                 << ", \"best_gflops\": "
                 << llvm::format("%.1f", flops / s->best / 1e9) << "}\n";
  }
  return 0;
}
