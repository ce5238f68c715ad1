//===- Session.h - a compiled model, its weights and KV cache ---*- C++ -*-===//
//
// Runs a config's prefill and decode entries (a Program: compiled by the
// JIT, or an artifact loaded without it), binds the weights
// (on the CPU never copied: the caller keeps them alive; on the GPU copied
// to the device once), and owns the KV cache: one position-major
// (context_length, batch, kv_dim) buffer per layer for keys and one for
// values. Prefill writes rows [T, T+S) of each; decode one row.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_SESSION_H
#define TLM_RUNTIME_SESSION_H

#include "lib/io/LargeBuffer.h"
#include "lib/model/Config.h"
#include "lib/runtime/cuda/CudaRuntime.h"
#include "lib/runtime/Program.h"

#include <memory>
#include <vector>

namespace tlm::runtime {

struct JitOptions;
struct ArtifactRequest;

struct SessionOptions {
  int64_t batch = 1;
  /// The CPU KV cache on huge pages (io::LargeBuffer).
  bool hugePages = true;
  /// Run this ahead-of-time artifact (compileProgram wrote it)
  /// instead of compiling: it must hold the same model, and runs on the
  /// threads it was compiled for.
  std::string artifact;
  /// On the GPU: each one-token decode step recorded and launched as a
  /// CUDA graph (cuda::StepGraph) rather than kernel by kernel.
  bool cudaGraphs = false;
};

class Session {
public:
  /// On the GPU, gives back the host code's buffers kept for reuse.
  ~Session();

  /// Loads the artifact `options.artifact`, which must hold `config`'s
  /// model, without weights: bind them with setWeights() before step().
  /// The runtime's way in; it needs no compiler.
  static Expected<std::unique_ptr<Session>> open(const model::Config &config,
                                                 const SessionOptions &options);

  /// Compiles `config` with the JIT (or loads `options.artifact`), without
  /// weights. Compiling first lets the compiler's transient heap be
  /// returned to the OS before the weights arrive, so the two never add up
  /// in peak memory. Defined in the compiler (SessionCompile.cpp): only a
  /// build with LLVM has it.
  static Expected<std::unique_ptr<Session>>
  compile(const model::Config &config, const SessionOptions &options,
          const JitOptions &jit);
  /// The model's entries compiled per `jit`, without a session: into this
  /// process, or into the artifact `artifact` names (which needs no KV
  /// cache, nor a GPU for a cuda one). The compiler's.
  static Expected<std::unique_ptr<Program>>
  compileProgram(const model::Config &config, const JitOptions &jit,
                 const ArtifactRequest *artifact = nullptr);
  /// compile() then setWeights(): `weights` are in model::weightSpecs
  /// order, each a dense f32 tensor of the spec's shape, and must outlive
  /// the session. Also the compiler's.
  static Expected<std::unique_ptr<Session>>
  create(const model::Config &config, std::vector<const void *> weights,
         const SessionOptions &options, const JitOptions &jit);
  static Expected<std::unique_ptr<Session>>
  create(const model::Config &config, std::vector<const void *> weights);

  /// Binds `weights` (model::weightSpecs order; on the CPU they must
  /// outlive the session, on the GPU they are copied to the device once,
  /// here).
  Error setWeights(std::vector<const void *> weights);

  /// Bytes of the KV cache of `batch` sequences: keys and values, f32, every
  /// layer, the whole context.
  static double kvCacheBytes(const model::Config &config, int64_t batch) {
    return 8.0 * config.numLayers * config.contextLength * batch *
           config.kvDim();
  }

  /// At most the bytes the compiled CPU code allocates while it runs `seq`
  /// tokens of each of `batch` sequences on `threads` threads, with the
  /// logits of every position (step) or of the last (stepLast): its
  /// activations and its own logits, not the KV cache, the weights or the
  /// caller's logits. An upper bound fitted to the counted heap
  /// (tlm_abi_heap_peak) with room; ActivationBoundTest holds it to that.
  static double activationBytes(const model::Config &config, int64_t batch,
                                int64_t seq, int threads, bool everyPosition);

  /// Why a session of `batch` sequences would not fit in memory (the KV
  /// cache), or an empty string; create() fails with this message.
  static std::string memoryShortfall(const model::Config &config,
                                     int64_t batch);

  /// Runs `seq` new tokens per sequence (`ids` is (batch, seq)), sequence b
  /// at positions position(b)..position(b)+seq-1, appends their keys/values
  /// to its cache rows and writes logits (batch, seq, vocab).
  Error step(const int64_t *ids, int64_t seq, float *logits);

  /// As step(), but writes only the last position's logits (batch, vocab):
  /// what generation needs, for the prompt and for every token after it.
  /// The head (a fifth of small.json's prefill) runs on one row.
  Error stepLast(const int64_t *ids, int64_t seq, float *logits);

  /// Forgets the cache: the next step starts at position 0.
  void reset() { positions_.assign(batch_, 0); }
  /// Forgets sequence b's positions from `length` on (at most position(b)):
  /// its next step starts there. Sequences of different lengths then step
  /// together, each at its own position: prompts of different lengths are
  /// prefilled as one batch, right-padded, and each cut back to its own.
  Error truncate(int64_t b, int64_t length);
  /// Bytes of the CPU KV cache resident in memory (the pages its rows have
  /// touched: on huge pages, whole 2 MiB pages); 0 on the GPU.
  size_t kvCacheResidentBytes() const { return cache_.residentBytes(); }
  /// The most positions any sequence has cached (all of them, when the
  /// sequences have stepped together), and sequence b's.
  int64_t position() const;
  int64_t position(int64_t b) const { return positions_[b]; }
  int64_t batch() const { return batch_; }
  const model::Config &config() const { return config_; }
  /// The code this session runs.
  const Program &program() const { return *program_; }
  /// The decode steps' CUDA graph, or null when they run kernel by kernel.
  const cuda::StepGraph *stepGraph() const { return graph_.get(); }

private:
  Session(const model::Config &config) : config_(config) {}
  /// A session of `config` without code: the KV cache allocated, the
  /// weights' shapes known; `cuda` puts the cache in device memory.
  static Expected<std::unique_ptr<Session>>
  allocate(const model::Config &config, const SessionOptions &options,
           bool cuda);
  model::Config config_;
  int64_t batch_ = 1;
  /// Each sequence's cached positions.
  std::vector<int64_t> positions_;
  /// Where a step's new keys and values go when the sequences' positions
  /// differ (then they are scattered to each one's rows): 2 x layers
  /// buffers of (seq, batch, kv_dim).
  std::vector<float> scatter_;
  std::vector<const void *> weights_;
  std::vector<std::vector<int64_t>> weightShapes_;
  std::vector<size_t> weightBytes_;
  /// Keys then values of each layer, (context_length, batch, kv_dim), one
  /// after the other in one allocation.
  io::LargeBuffer cache_;
  int64_t layerFloats_ = 0;
  float *cacheBuffer(int64_t i) {
    float *base =
        static_cast<float *>(cuda_ ? deviceCache_.get() : cache_.data());
    return base + i * layerFloats_;
  }
  /// On the GPU: the weights, the cache, and each step's ids and logits live
  /// in device memory (the latter two grown as needed).
  bool cuda_ = false;
  std::vector<cuda::DevicePtr> deviceWeights_;
  cuda::DevicePtr deviceCache_, deviceIds_, deviceLogits_, deviceLengths_;
  /// Page-locked copies of a step's ids, lengths and logits, which the
  /// driver moves on the compute stream.
  cuda::PinnedBuffer idsStaging_, lengthsStaging_, logitsStaging_;
  size_t idsBytes_ = 0, logitsBytes_ = 0, lengthsBytes_ = 0;
  /// With SessionOptions::cudaGraphs: one-token decode steps' graph.
  std::unique_ptr<cuda::StepGraph> graph_;
  /// Both steps: the "prefill" entry (every position's logits) or, with
  /// `lastOnly`, the "decode" one (the last position's).
  Error run(bool lastOnly, const int64_t *ids, int64_t seq, float *logits);
  Error stepOnDevice(std::string_view entry, const int64_t *ids, int64_t seq,
                     float *logits, int64_t logitRows,
                     std::vector<TensorRef> &args);
  std::unique_ptr<Program> program_;
};

/// An error when `logits` (`count` floats, rows of `config`'s vocabulary)
/// hold NaN or Inf: the weights' fault (naming the first weight, of
/// `weights` in model::weightSpecs order, that is not finite) or an
/// overflow of f32. The command-line tools and the C API check alike.
Error checkLogitsFinite(const model::Config &config,
                        const std::vector<const void *> &weights,
                        const float *logits, int64_t count);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_SESSION_H
