//===- CpuCodegen.h - LLVM module to running code, on several threads -*- C++
//-*-===//
//
// mlir::ExecutionEngine optimizes and compiles a module on one thread. On
// small.json that was two thirds of the JIT time, spent in functions that
// do not depend on each other (the block's loop nests are separate
// OpenMP-outlined functions). Here the module is split into one part per
// thread, balanced by instruction count, each part optimized and compiled
// to an object in its own LLVMContext, and the objects linked into an
// LLJIT.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_CPUCODEGEN_H
#define TLM_RUNTIME_CPUCODEGEN_H

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"

#include <memory>
#include <string>
#include <vector>

namespace tlm::runtime {

struct CpuCodegenOptions {
  unsigned optLevel = 3;
  /// LLVM's default pipeline with its loop unroller and vectorizers (off:
  /// the cleanup pipeline for loops tlm vectorized; see optimize()).
  bool llvmLoopTransforms = false;
  /// Parts compiled at once (1: no split).
  unsigned threads = 1;
  /// With threads, a top-level loop of at least this many instructions
  /// leaves its function when as many stay behind (see outlineBigLoops).
  uint64_t outlineLoopSize = 1500;
  /// Shared libraries the code calls into, loaded before linking.
  std::vector<std::string> sharedLibs;
  /// When set, the machine code is written there (as one object).
  std::string objectPath;
};

/// LLVM's four analysis managers, registered with a pass builder and
/// wired to one another: what running a new-PM pipeline on a module needs.
struct AnalysisManagers {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  explicit AnalysisManagers(llvm::PassBuilder &pb) {
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
  }
};

/// The host's widest f32 vectors: how many lanes one holds and how many
/// registers of them there are (the pipeline sizes its blocks by both).
struct VectorShape {
  int64_t lanes;
  int64_t registers;
};
/// From the host CPU's features: AVX-512 16 x 32, AVX/AVX2 8 x 16, other
/// x86 (SSE) 4 x 16, AArch64 (NEON) 4 x 32, anything else 4 x 16.
VectorShape hostVectorShape();
/// The host's shape for `lanes` 0 or the host's own width; for another
/// width, the registers an x86 host with such vectors has (32 of 16 lanes,
/// 16 of 8 or 4).
VectorShape vectorShapeFor(int64_t lanes);

/// The host's last-level cache in bytes (32 MiB where the C library does
/// not say).
uint64_t lastLevelCacheBytes();
/// Columns per block of decode's GEMV (JitOptions::gemvColumns) for a
/// model of `weightBytes`: 1 (one sequential stream through W) when the
/// weights do not fit in the last-level cache, so every step reads them
/// from memory; otherwise 8.
int64_t gemvColumnsFor(uint64_t weightBytes);

/// The compiled code of one module.
class CpuCode {
public:
  /// Compiles `module` (its functions `entries` get packed wrappers
  /// `_mlir_<name>(void **args)`, ExecutionEngine's calling convention).
  /// `prepare` runs on the whole module first (after the wrappers exist).
  static llvm::Expected<std::unique_ptr<CpuCode>>
  compile(std::unique_ptr<llvm::Module> module,
          std::unique_ptr<llvm::LLVMContext> context,
          llvm::orc::JITTargetMachineBuilder machine,
          llvm::ArrayRef<std::string> entries,
          llvm::function_ref<void(llvm::Module &)> prepare,
          const CpuCodegenOptions &options);

  /// The packed wrapper of `entry`.
  llvm::Expected<void (*)(void **)> lookupPacked(llvm::StringRef entry);

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_CPUCODEGEN_H
