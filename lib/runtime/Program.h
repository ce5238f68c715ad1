//===- Program.h - compiled entry points and how to call them ---*- C++ -*-===//
//
// What runs a model, whichever way its code arrived: compiled in this
// process (Jit.h, in the compiler) or loaded from an ahead-of-time artifact
// (Artifact.h, in the runtime). Either way a Program is a set of entries,
// each a packed wrapper (`_mlir_<name>`, one void* per memref descriptor
// field) with its buffers' shapes, called with caller-owned row-major
// buffers: inputs first, then one output per result.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_PROGRAM_H
#define TLM_RUNTIME_PROGRAM_H

#include "lib/support/Error.h"
#include "lib/support/Strings.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tlm::runtime {

/// A dense, row-major, caller-owned buffer and its shape.
struct TensorRef {
  void *data;
  std::vector<int64_t> shape;
};

/// How the code was made: the compiler's phases (zero for a loaded
/// artifact, whose load time is `codegenMs`).
struct CompileStats {
  /// Milliseconds in the pass pipeline and in LLVM code generation (or the
  /// load of an artifact or of a cached compile).
  double pipelineMs = 0, codegenMs = 0;
  /// The LLVM optimisation level and the threads LLVM compiled on.
  unsigned optLevel = 3, compileThreads = 1;
  /// Whether the code came from the compile cache.
  bool cacheHit = false;
};

struct ArtifactManifest;

class Program {
public:
  virtual ~Program();

  /// Calls `entry` with `args` = inputs followed by outputs. Ranks and
  /// static sizes are checked against the entry's signature; a mismatch is
  /// an error naming the argument.
  Error call(std::string_view entry, Span<TensorRef> args) const;

  /// Whether the entries take device buffers (the GPU target).
  bool onDevice() const { return onDevice_; }
  const CompileStats &stats() const { return stats_; }
  /// The manifest of the artifact this program runs, or null.
  virtual const ArtifactManifest *artifactManifest() const { return nullptr; }

  /// A dynamic size in a signature.
  static constexpr int64_t kDynamic = -1;

  /// The CPU code's heap counters (lib/runtime/abi/Alloc.h): this
  /// process's for code compiled here, the artifact's own copy for an
  /// artifact; null for GPU code, whose buffers are the runtime's.
  struct HeapCounters {
    uint64_t (*peak)() = nullptr;
    void (*resetPeak)() = nullptr;
    void (*setLimit)(uint64_t) = nullptr;
  };
  const HeapCounters &heap() const { return heap_; }

protected:
  struct Entry {
    /// Shapes of the inputs then the outputs (kDynamic for a dynamic size).
    std::vector<std::vector<int64_t>> shapes;
    unsigned numInputs = 0;
    void (*packed)(void **) = nullptr;
  };
  std::map<std::string, Entry, std::less<>> entries_;
  CompileStats stats_;
  bool onDevice_ = false;
  HeapCounters heap_;
};

/// Readies the process for libomp, before it loads:
/// - Workers that spin forever collapse when the host is busy, and workers
///   that sleep at once pay a wake-up per loop nest (10x slower decode on
///   tiny models, measured): they spin at most 1 ms after a loop, then
///   sleep (KMP_BLOCKTIME; the user's OMP_WAIT_POLICY or KMP_BLOCKTIME win).
/// - libomp registers each process in a file named after its pid
///   (/dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>) and removes it at exit; a
///   process that died first (killed, or ended by _Exit) leaves its file,
///   and a later process given the same pid reads it while starting: a
///   SIGBUS or SIGSEGV inside libomp (5 of 3000 starts of a bare
///   dlopen-and-omp_set_num_threads program on the development machine, 0 of
///   3000 with the file removed). No living process can hold this
///   process's pid, so such a file is stale: it is removed here.
void prepareOpenMP();
/// Sets libomp's thread count through its `omp_set_num_threads` (`symbol`,
/// null when libomp did not load). Process-wide: every program in this
/// process runs on the last count set.
Error setOpenMPThreads(void *symbol, int threads);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_PROGRAM_H
