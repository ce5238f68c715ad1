//===- Commands.cpp - tlm-run's sessions, and emit ------------------------===//
//
// forward, generate, eval and bench are tools/common's (shared with
// tlm-exec); tlm-run gives them its sessions: compiled by the JIT (or from
// the compile cache), or loaded from --artifact.
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"

#include "lib/compiler/Builder.h"
#include "lib/compiler/HostTarget.h"
#include "passes/pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace tlm::cli {

Expected<model::Config> loadConfig(const Options &o) {
  return cli::loadConfig(o.flags());
}

Error checkThreads(const Options &o) {
  return cli::checkThreads(o.flags());
}

Expected<model::Weights> loadWeights(const Options &o,
                                           const model::Config &c) {
  return cli::loadWeights(o.flags(), c);
}

namespace {

/// A session `c` compiled per the flags (or from the compile cache).
Expected<std::unique_ptr<runtime::Session>>
compileSession(const Options &o, const model::Config &c, int64_t batch) {
  auto jit = jitOptions(o, c);
  if (!jit)
    return jit.takeError();
  auto huge = hugePages(o.flags());
  if (!huge)
    return huge.takeError();
  // Not enough memory is the user's problem; a failure after that is ours.
  std::string shortfall = runtime::Session::memoryShortfall(c, batch);
  if (!shortfall.empty())
    return cli::userError(shortfall);
  runtime::SessionOptions options;
  options.batch = batch;
  options.hugePages = *huge;
  auto graphs = cudaGraphs(o.flags());
  if (!graphs)
    return graphs.takeError();
  if (*graphs && o.flags().target != "cuda")
    return cli::userError("--cuda-graphs on needs --target cuda");
  options.cudaGraphs = *graphs;
  auto s = runtime::Session::compile(c, options, *jit);
  if (s)
    return s;
  // A GPU setup problem (no libdevice, kernels the driver rejects) or a
  // CPU without what --compute needs makes the target unavailable;
  // anything else is a compiler failure.
  Error err = s.takeError();
  if (err.kind() == ErrorKind::Unavailable)
    return Error::withExitCode(3, "target " + o.flags().target + ": " +
                                      err.message());
  return Error::withExitCode(2, "compilation failed: " + err.message());
}

} // namespace

SessionMaker jitSessions(const Options &o) {
  return [&o](const Flags &f, const model::Config &c,
              int64_t batch) -> Expected<std::unique_ptr<runtime::Session>> {
    if (f.artifact.empty())
      return compileSession(o, c, batch);
    // The compile flags are checked even though an artifact needs none.
    if (auto jit = jitOptions(o, c); !jit)
      return jit.takeError();
    return artifactSession(f, c, batch);
  };
}

Error runEmit(const Options &o) {
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  static const char *const kStages[] = {"tlm", "linalg", "llvm", "llvm-ir",
                                         "asm", "gpu"};
  if (std::find(std::begin(kStages), std::end(kStages), o.stage) ==
      std::end(kStages))
    return flagError("--stage must be tlm, linalg, llvm, llvm-ir, asm or gpu, "
                     "found '" + o.stage + "'");
  bool hostCode = o.stage == "llvm-ir" || o.stage == "asm";
  if (o.compute != "f32" && o.compute != "bf16" && o.compute != "int8")
    return flagError("--compute must be f32, bf16 or int8, found '" +
                     o.compute + "'");
  bool cpuStage = o.stage == "llvm" || hostCode;
  if (o.compute != "f32" && !cpuStage)
    return flagError("--compute shapes the CPU pipeline's code: give --stage "
                     "llvm, llvm-ir or asm, not " + o.stage);
  // LLVM IR and assembly are the host's code: a host without the
  // instructions could not select them.
  if (o.compute == "int8" && hostCode && !runtime::hostCpuTarget().avx512vnni)
    return Error::withExitCode(
        3, "target cpu: --compute int8 multiplies with AVX512-VNNI's "
           "vpdpbusd, which this CPU lacks (--stage llvm prints the code for "
           "any host)");
  if (o.compute == "bf16" && hostCode && !runtime::hostCpuTarget().avx512bf16)
    return Error::withExitCode(
        3, "target cpu: --compute bf16 multiplies with AVX512-BF16's "
           "vdpbf16ps, which this CPU lacks (--stage llvm prints the code "
           "for any host)");
  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = mlir::OwningOpRef<mlir::ModuleOp>(
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx)));
  model::addGenerationFunctions(*module, *config);
  if (o.stage == "tlm") {
    // No pipeline runs: MLIR's flags would have nothing to observe.
    for (auto &[flag, opt] : llvm::cl::getRegisteredOptions())
      if (flag.starts_with("mlir-") && opt->getNumOccurrences() > 0)
        return flagError("--" + flag.str() +
                         " observes MLIR's pass pipeline, which --stage tlm "
                         "does not run");
  } else {
    mlir::PassManager pm(&ctx);
    if (o.stage == "linalg")
      mlir::tlm::buildLinalgPipeline(pm);
    else if (o.stage == "gpu")
      mlir::tlm::buildGpuPipeline(pm);
    else {
      // The reference target's code (Strategy.h's CpuTarget), in --compute.
      mlir::tlm::CpuPipelineOptions cpu;
      if (o.compute == "bf16")
        cpu.compute = mlir::tlm::CpuCompute::BF16;
      if (o.compute == "int8")
        cpu.compute = mlir::tlm::CpuCompute::Int8;
      mlir::tlm::buildCpuPipeline(pm, cpu);
    }
    // --mlir-timing as in a compile (JitFlags.cpp): the report comes when
    // the pipeline is done.
    auto timing = std::make_unique<mlir::DefaultTimingManager>();
    mlir::applyDefaultTimingManagerCLOptions(*timing);
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return Error::withExitCode(2,
                                         "the " + o.stage + " pipeline failed");
    if (timing->isEnabled())
      pm.enableTiming(std::move(timing));
    if (failed(pm.run(*module)))
      return Error::withExitCode(2,
                                         "the " + o.stage + " pipeline failed");
  }
  if (hostCode) {
    auto text = runtime::hostCodeText(*module, o.stage == "asm");
    if (!text)
      return Error::withExitCode(2, "--stage " + o.stage + ": " +
                                        llvm::toString(text.takeError()));
    llvm::outs() << *text;
    return Error::success();
  }
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return Error::success();
}

} // namespace tlm::cli
