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
  JitOptions options = jit;
  options.weightBytes = model::weightBytes(config);
  ArtifactRequest request = artifact ? *artifact : ArtifactRequest();
  request.model = model::configToJson(config);
  return compileInOwnContext(
      [&](mlir::ModuleOp module) {
        model::addGenerationFunctions(module, config);
        return llvm::Error::success();
      },
      [&](mlir::OwningOpRef<mlir::ModuleOp> module) {
        return artifact
                   ? Jit::compileArtifact(std::move(module), options, request)
                   : Jit::compile(std::move(module), options);
      });
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
