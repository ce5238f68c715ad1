//===- Jit.h - compile a tlm module and call its entry points ---*- C++ -*-===//
//
// The runtime's lowest layer: takes a module of public functions on tensors
// (tlm ops or anything the pipelines lower), runs `tlm-cpu-pipeline` (or
// `tlm-gpu-pipeline`), JIT-compiles the host code with LLVM for the host
// CPU, and calls an entry with
// caller-owned row-major buffers: inputs first, then one output buffer per
// function result. Weights are just inputs; nothing is baked into the code.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_JIT_H
#define TLM_RUNTIME_JIT_H

#include "lib/runtime/Artifact.h"
#include "lib/compiler/CpuCodegen.h"
#include "lib/runtime/Program.h"
#include "passes/pipelines/CpuSwitches.h"
#include "passes/pipelines/GpuSwitches.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tlm::runtime {

/// Registers every dialect, extension and translation a tlm compile needs.
void registerAll(mlir::DialectRegistry &registry);

enum class Target { Cpu, Cuda };

/// An error naming `cpu` unless LLVM knows it for the host's architecture
/// (ArtifactRequest::cpu).
llvm::Error checkCpuName(const std::string &cpu);

/// `module`, lowered to the LLVM dialect, as the host's code generation
/// sees it (tlm-run emit): LLVM IR as translated, before LLVM's own
/// passes, or with `assembly` the host's assembly after them at O3.
llvm::Expected<std::string> hostCodeText(mlir::ModuleOp module, bool assembly);

/// The host's cores (at least 1).
unsigned defaultCompileThreads();

struct JitOptions {
  /// Cpu: `tlm-cpu-pipeline`, code for the host. Cuda: `tlm-gpu-pipeline`,
  /// kernels as PTX for the driver to compile; entries then take device
  /// buffers (see CudaRuntime.h).
  Target target = Target::Cpu;
  /// LLVM optimisation level for the generated code (0-3).
  unsigned optLevel = 3;
  /// LLVM's default IR pipeline with its loop unroller and loop/SLP
  /// vectorizers (CPU). Off by default: the pipeline's code comes
  /// vectorized and unrolled where it pays, and only a cleanup pipeline
  /// runs (CpuCodegen.cpp).
  bool llvmLoopTransforms = false;
  /// Worker threads: above 1, the parallel loops run as OpenMP worksharing
  /// loops on that many threads (libomp; idle workers spin at most 1 ms).
  int threads = 1;
  /// Threads LLVM optimizes and compiles the module on (CpuCodegen.h):
  /// all cores unless set; independent of `threads`.
  unsigned compileThreads = defaultCompileThreads();
  /// Loops of this many LLVM instructions get functions of their own
  /// before the split (CpuCodegenOptions::outlineLoopSize; tests lower it).
  uint64_t outlineLoopSize = 1500;
  /// Compile the entries' wrappers (which hold the entries, inlined) at
  /// `optLevel` too. Off, they are compiled quickly without optimisation
  /// (compileWrappersQuickly, JitSteps.h), which suits the model's entries:
  /// they call the block and head functions, where the work is. The
  /// training step holds its work itself, so it sets this.
  bool optimizeEntries = false;
  /// f32 lanes of the vectors the CPU code is blocked for (16, 8 or 4);
  /// 0: the host's widest (HostTarget.h). Another width than the host's
  /// still runs, which lets the tests cover every width on any machine.
  int64_t lanes = 0;
  /// Output columns per block of decode's GEMV; 0: the strategy's choice
  /// for `weightBytes` (passes/cpu/Strategy.h).
  int64_t gemvColumns = 0;
  /// The most queries and keys a block of training's attention holds
  /// (CpuPipelineOptions::attentionBlock; the switch attention-blocks).
  int64_t attentionBlock = 64;
  /// The model's weights in bytes, which the strategy sizes decode's GEMV
  /// by (Session sets it); 0: unknown.
  uint64_t weightBytes = 0;
  /// Cuda: prefill's projections on tensor cores
  /// (tlm-gpu-tile-matmuls{tensor-cores}): "tf32" rounds their inputs to 10
  /// of f32's 23 mantissa bits, "bf16" to 7; "none" keeps f32 FMAs.
  std::string tensorCores = "none";
  /// Cpu: the arithmetic of prefill's packed projection tiles, "f32" or
  /// "bf16" (CpuPipelineOptions::compute; needs AVX512-BF16).
  std::string compute = "f32";
  /// The optimizations of the CPU pipeline, each switchable to measure it
  /// (passes/pipelines/CpuSwitches.def).
  mlir::tlm::CpuSwitches switches;
  /// Cuda: the GPU pipeline's kernel forms, each switchable
  /// (passes/pipelines/GpuSwitches.def).
  mlir::tlm::GpuSwitches gpuSwitches;
  /// Verify the IR after every pass of the pipeline, as tlm-opt does, rather
  /// than once after the last. On in builds with assertions and in the unit
  /// tests; release builds skip it (on small.json it was a large share of
  /// the pipeline's time).
#ifdef NDEBUG
  bool verifyEachPass = false;
#else
  bool verifyEachPass = true;
#endif
  /// A folder for compiled CPU code (CompileCache.h): a CPU compile into
  /// this process whose every input matches a stored one links that code
  /// instead. Empty: no cache (tlm-run passes defaultCacheDir()).
  std::string cacheDir;
  /// Print the IR after each pass of the pipeline (debugging).
  bool printIR = false;
  /// Lets a tool apply its command-line options (--mlir-timing, IR
  /// printing, ...) to the pass manager before it runs.
  std::function<mlir::LogicalResult(mlir::PassManager &)> configurePassManager;
};

/// A compile whose code leaves the process: an ahead-of-time artifact (a
/// shared library, Artifact.h).
struct ArtifactRequest {
  /// The shared library to write.
  std::string path;
  /// The model's config (JSON), which the artifact records.
  std::string model;
  /// An LLVM CPU name to compile for instead of the host (its instruction
  /// sets, and the strategy's blocking for its vector width); CPU only. The
  /// code is written, not loaded, as the host may lack those instruction
  /// sets.
  std::string cpu;
};

/// A Program compiled in this process. Four cases share one pipeline step
/// and one CPU code step (with the compile cache): CPU code run here, a
/// CPU artifact (run here unless it is for another CPU), GPU kernels run
/// here, a cuda artifact (written only).
class Jit : public Program {
public:
  /// Lowers `module` (in place) and compiles it into this process, from
  /// the compile cache when it holds this compile. On failure the error
  /// holds the MLIR diagnostics.
  static llvm::Expected<std::unique_ptr<Jit>>
  compile(mlir::OwningOpRef<mlir::ModuleOp> module,
          const JitOptions &options = {});
  /// Lowers `module` and writes its code to the artifact `request` names;
  /// the Jit runs that artifact where the host can (a CPU artifact for the
  /// host).
  static llvm::Expected<std::unique_ptr<Jit>>
  compileArtifact(mlir::OwningOpRef<mlir::ModuleOp> module,
                  const JitOptions &options, const ArtifactRequest &request);

  /// The manifest of the artifact this Jit wrote (and runs, unless it was
  /// written for another CPU), or null.
  const ArtifactManifest *artifactManifest() const override;

  /// As Program::call, with an llvm::Error (the compiler's tests use it).
  llvm::Error call(llvm::StringRef entry, llvm::ArrayRef<TensorRef> args) const;

private:
  class DiagnosticLog;
  Jit() = default;
  static llvm::Expected<std::unique_ptr<Jit>>
  build(mlir::OwningOpRef<mlir::ModuleOp> module, const JitOptions &options,
        const ArtifactRequest *artifact);
  /// Each public function's tensor signature, before lowering erases it.
  void recordEntries(mlir::ModuleOp module);
  /// The CPU or GPU pipeline for `options` (and the artifact, if any).
  static llvm::Error buildPipeline(mlir::PassManager &pm,
                                   const JitOptions &options,
                                   const ArtifactRequest *artifact,
                                   const std::vector<std::string> &cpuFeatures);
  /// Runs the pipeline; its diagnostics go into the error.
  static llvm::Error lower(mlir::ModuleOp module, mlir::PassManager &pm,
                           const JitOptions &options,
                           const DiagnosticLog &log);
  /// The shared CPU step: the objects of `module`, from the cache in
  /// `cacheDir` (if any) or lowered, translated and compiled.
  llvm::Expected<std::vector<Bytes>>
  cpuObjects(mlir::ModuleOp module, mlir::PassManager &pm,
             const llvm::orc::JITTargetMachineBuilder &machine,
             const CpuCodegenOptions &codegen, const JitOptions &options,
             const std::string &cacheDir, const DiagnosticLog &log);
  /// The cases: CPU code loaded here, a CPU artifact, GPU kernels loaded
  /// here, a cuda artifact.
  llvm::Error compileCpu(mlir::ModuleOp module, mlir::PassManager &pm,
                         const llvm::orc::JITTargetMachineBuilder &machine,
                         const CpuCodegenOptions &codegen,
                         const JitOptions &options, const DiagnosticLog &log);
  llvm::Error
  writeCpuArtifact(mlir::ModuleOp module, mlir::PassManager &pm,
                   const llvm::orc::JITTargetMachineBuilder &machine,
                   const CpuCodegenOptions &codegen, const JitOptions &options,
                   const ArtifactRequest &request, const DiagnosticLog &log);
  llvm::Error compileCuda(mlir::ModuleOp module, mlir::PassManager &pm,
                          const llvm::orc::JITTargetMachineBuilder &machine,
                          const JitOptions &options, bool dumpObject,
                          const DiagnosticLog &log);
  /// Every entry's packed function, looked up (and so compiled) now.
  llvm::Error resolveEntries();
  /// OpenMP's team size, when the code runs on more than one thread.
  llvm::Error startOpenMP(int threads);
  /// The GPU pipeline's host module through ExecutionEngine.
  llvm::Error compileGpuHost(mlir::ModuleOp module,
                             std::unique_ptr<llvm::TargetMachine> tm,
                             llvm::CodeGenOptLevel level, unsigned optLevel,
                             bool dumpObject);
  /// A cuda artifact of the GPU pipeline's output at request.path
  /// (written, not loaded).
  llvm::Error
  writeCudaArtifact(mlir::ModuleOp module,
                    const llvm::orc::JITTargetMachineBuilder &machine,
                    const JitOptions &options, const ArtifactRequest &request);
  /// The GPU path's host code (ExecutionEngine runs its module
  /// constructors, which load the kernels), or the CPU code.
  std::unique_ptr<mlir::ExecutionEngine> engine_;
  std::unique_ptr<CpuCode> cpu_;
  std::unique_ptr<LoadedArtifact> artifact_;
  /// The manifest of an artifact written for another CPU (not loaded).
  std::optional<ArtifactManifest> written_;
  ArtifactManifest manifestOf(const llvm::orc::JITTargetMachineBuilder &machine,
                              const JitOptions &options,
                              const ArtifactRequest &request) const;
};

/// The module `build` fills, in an MLIR context of its own, compiled by
/// `compile` (Jit::compile or Jit::compileArtifact). The machine code does
/// not refer to the context, which is gone when this returns, and the
/// compiler's heap is handed back to the OS (glibc keeps it otherwise, and
/// it would count on top of the weights that come next).
Expected<std::unique_ptr<Program>> compileInOwnContext(
    llvm::function_ref<llvm::Error(mlir::ModuleOp)> build,
    llvm::function_ref<llvm::Expected<std::unique_ptr<Jit>>(
        mlir::OwningOpRef<mlir::ModuleOp>)>
        compile);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_JIT_H
