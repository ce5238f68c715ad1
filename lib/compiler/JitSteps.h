//===- JitSteps.h - steps the JIT's cases share (private) -------*- C++ -*-===//
//
// Jit.cpp holds the CPU cases and the shared steps, JitCuda.cpp the CUDA
// cases; this header is what the two files share, and nothing else
// includes it.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_COMPILER_JITSTEPS_H
#define TLM_COMPILER_JITSTEPS_H

#include "lib/compiler/Jit.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace tlm::runtime {
namespace jit {

double msSince(std::chrono::steady_clock::time_point start);

/// The entries are `alwaysinline` (see tlm-memref-entry): inlined here into
/// the engine's packed wrappers (`_mlir_<name>`), which are then compiled
/// without optimization. They unpack memref descriptors, gather the
/// prompt's embedding rows (inline with one thread, an OpenMP-outlined and
/// optimized function with more) and call the block and head functions,
/// yet instruction selection of their thousand-odd descriptor fields was
/// slow at O3; FastISel takes a fraction of that time.
void compileWrappersQuickly(llvm::Module &m);
/// Only the inlining of the entries into their wrappers, which then are
/// optimized with the rest (JitOptions::optimizeEntries).
void inlineEntries(llvm::Module &m);

/// `module` (lowered to the LLVM dialect) as LLVM IR for `machine`, in a
/// context of its own; a null module when the translation fails (its
/// diagnostics went to the context's handler).
struct Translated {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
};
llvm::Expected<Translated>
translateFor(mlir::ModuleOp module,
             const llvm::orc::JITTargetMachineBuilder &machine);

/// The keys of `map`, in its order (the entries' names).
template <typename Map> std::vector<std::string> keysOf(const Map &map) {
  std::vector<std::string> keys;
  for (const auto &entry : map)
    keys.push_back(entry.first);
  return keys;
}

/// LLVM's code generation level for an optimisation level 0-3.
llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel);

} // namespace jit

/// The MLIR diagnostics of one compile, collected for its error message.
class Jit::DiagnosticLog {
public:
  explicit DiagnosticLog(mlir::MLIRContext *ctx)
      : os_(text_), handler_(ctx, [this](mlir::Diagnostic &d) {
          os_ << d.getLocation() << ": " << d << "\n";
          return mlir::success();
        }) {}
  /// `what`, then the diagnostics on lines of their own.
  llvm::Error error(const llvm::Twine &what) const {
    return llvm::createStringError(what + (text_.empty() ? "" : ":\n" + text_));
  }

private:
  std::string text_;
  llvm::raw_string_ostream os_;
  mlir::ScopedDiagnosticHandler handler_;
};

} // namespace tlm::runtime

#endif // TLM_COMPILER_JITSTEPS_H
