//===- CpuCodegen.h - LLVM module to running code, on several threads -*- C++
//-*-===//
//
// mlir::ExecutionEngine optimizes and compiles a module on one thread. On
// small.json that was most of the JIT time, spent in functions that
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
  /// Optimize the entries' wrappers like the rest rather than quickly
  /// (JitOptions::optimizeEntries).
  bool optimizeEntries = false;
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

/// One relocatable object file.
using Bytes = llvm::SmallVector<char, 0>;

/// The compiled code of one module.
class CpuCode {
public:
  /// Compiles `module` to objects (its functions `entries` get packed
  /// wrappers `_mlir_<name>(void **args)`, ExecutionEngine's calling
  /// convention). `prepare` runs on the whole module first (after the
  /// wrappers exist).
  static llvm::Expected<std::vector<Bytes>>
  compileObjects(std::unique_ptr<llvm::Module> module,
                 std::unique_ptr<llvm::LLVMContext> context,
                 llvm::orc::JITTargetMachineBuilder machine,
                 llvm::ArrayRef<std::string> entries,
                 llvm::function_ref<void(llvm::Module &)> prepare,
                 const CpuCodegenOptions &options);
  /// Links `objects` in process, after loading `sharedLibs` (the libraries
  /// the code calls into).
  static llvm::Expected<std::unique_ptr<CpuCode>>
  load(llvm::ArrayRef<Bytes> objects,
       llvm::orc::JITTargetMachineBuilder machine,
       llvm::ArrayRef<std::string> sharedLibs);

  /// `m` optimized at `optLevel` as the JIT optimizes it, then as assembly
  /// text for `machine` (tlm-run emit --stage asm).
  static llvm::Expected<std::string>
  assembly(llvm::Module &m, llvm::orc::JITTargetMachineBuilder machine,
           unsigned optLevel);

  /// The packed wrapper of `entry`.
  llvm::Expected<void (*)(void **)> lookupPacked(llvm::StringRef entry);

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_CPUCODEGEN_H
