//===- SessionCompile.cpp - sessions the JIT compiles ---------------------===//
//
// The compiler's half of Session (Session.cpp is the runtime's): building
// the model's module and compiling it in this process.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/Session.h"

#include "lib/compiler/Builder.h"
#include "lib/model/ConfigJson.h"
#include "lib/compiler/Jit.h"
#include "lib/compiler/LlvmError.h"

#include "mlir/IR/MLIRContext.h"

#include <malloc.h>

namespace tlm::runtime {

Expected<std::unique_ptr<Session>>
Session::create(const model::Config &config, std::vector<const void *> weights,
                const SessionOptions &options, const JitOptions &jit) {
  auto s = compile(config, options, jit);
  if (!s)
    return s.takeError();
  if (Error err = (*s)->setWeights(std::move(weights)))
    return std::move(err);
  return s;
}

Expected<std::unique_ptr<Session>>
Session::create(const model::Config &config,
                std::vector<const void *> weights) {
  return create(config, std::move(weights), SessionOptions(), JitOptions());
}

Expected<std::unique_ptr<Program>>
Session::compileProgram(const model::Config &config, const JitOptions &jit,
                        const ArtifactRequest *artifact) {
  Expected<std::unique_ptr<Program>> program = makeError("not compiled");
  {
    // Only the compiler needs the context: the machine code does not refer
    // to its uniqued types and attributes.
    mlir::DialectRegistry registry;
    registerAll(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
    model::addGenerationFunctions(*module, config);
    JitOptions jitOptions = jit;
    jitOptions.weightBytes = model::weightBytes(config);
    ArtifactRequest request = artifact ? *artifact : ArtifactRequest();
    request.model = model::configToJson(config);
    auto compiled =
        artifact ? Jit::compileArtifact(std::move(module), jitOptions, request)
                 : Jit::compile(std::move(module), jitOptions);
    if (compiled)
      program = std::unique_ptr<Program>(std::move(*compiled));
    else
      program = fromLlvm(compiled.takeError());
  }
  // The compiler's heap is free now; hand it back to the OS (glibc keeps
  // it otherwise, and it would count on top of the weights).
  malloc_trim(0);
  return program;
}

Expected<std::unique_ptr<Session>>
Session::compile(const model::Config &config, const SessionOptions &options,
                 const JitOptions &jit) {
  if (!options.artifact.empty())
    return open(config, options);
  // The cache first: a model that cannot fit is refused before compiling.
  auto s = allocate(config, options, jit.target == Target::Cuda);
  if (!s)
    return s.takeError();
  auto program = compileProgram(config, jit);
  if (!program)
    return program.takeError();
  (*s)->program_ = std::move(*program);
  return s;
}

} // namespace tlm::runtime
