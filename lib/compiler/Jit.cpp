//===- Jit.cpp - compile a tlm module and call its entry points -----------===//

#include "lib/compiler/Jit.h"
#include "lib/compiler/JitSteps.h"
#include "lib/runtime/Artifact.h"
#include "lib/compiler/ArtifactLink.h"
#include "lib/runtime/abi/Alloc.h"
#include "lib/compiler/CompileCache.h"
#include "lib/runtime/cuda/CudaRuntime.h"
#include "lib/compiler/HostTarget.h"
#include "lib/compiler/LlvmError.h"

#include "dialect/TlmDialect.h"
#include "passes/pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <malloc.h>
#include "llvm/Transforms/IPO/AlwaysInliner.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace tlm::runtime {
using namespace mlir;
using namespace jit;

namespace jit {
double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

void inlineEntries(llvm::Module &m) {
  llvm::PassBuilder pb;
  AnalysisManagers am(pb);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  mpm.run(m, am.mam);
}

void compileWrappersQuickly(llvm::Module &m) {
  inlineEntries(m);
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && f.getName().starts_with("_mlir_")) {
      f.addFnAttr(llvm::Attribute::NoInline);
      f.addFnAttr(llvm::Attribute::OptimizeNone);
    }
}

llvm::Expected<Translated>
translateFor(ModuleOp module,
             const llvm::orc::JITTargetMachineBuilder &machine) {
  auto tm = llvm::orc::JITTargetMachineBuilder(machine).createTargetMachine();
  if (!tm)
    return tm.takeError();
  Translated t;
  t.context = std::make_unique<llvm::LLVMContext>();
  t.module = translateModuleToLLVMIR(module, *t.context);
  if (t.module) {
    t.module->setDataLayout((*tm)->createDataLayout());
    t.module->setTargetTriple((*tm)->getTargetTriple());
  }
  return std::move(t);
}

llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel) {
  return optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
         : optLevel == 0 ? llvm::CodeGenOptLevel::None
                         : llvm::CodeGenOptLevel::Default;
}

} // namespace jit

namespace {
/// Everything the CPU code depends on, as text: the compiler, the host
/// target, the code generation options, the pass pipeline with its options
/// and the module before lowering. Two compiles with the same key make the
/// same objects.
std::string cpuCacheKey(ModuleOp module, PassManager &pm,
                        const llvm::orc::JITTargetMachineBuilder &machine,
                        const CpuCodegenOptions &codegen) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "tlm-cpu-code 1\ncompiler " << compilerIdentity() << "\ntarget "
     << machine.getTargetTriple().str() << " cpu " << machine.getCPU()
     << " features " << machine.getFeatures().getString() << "\ncodegen opt "
     << codegen.optLevel << " llvm-loops " << codegen.llvmLoopTransforms
     << " parts " << codegen.threads << " outline " << codegen.outlineLoopSize
     << " optimize-entries " << codegen.optimizeEntries << "\npipeline ";
  pm.printAsTextualPipeline(os);
  os << "\nmodule\n";
  module.print(os);
  return key;
}
void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Points `machine` at the LLVM CPU `cpu` with the instruction sets it
/// implies (listed in `features`, and as the machine's features, so an
/// artifact's manifest records and its loader checks them) instead of the
/// host's.
llvm::Error forCpu(llvm::orc::JITTargetMachineBuilder &machine,
                   const std::string &cpu, std::vector<std::string> &features) {
  // Asked of a generic subtarget first: a target machine for an unknown
  // CPU would print LLVM's own warning before the error.
  std::string why;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(machine.getTargetTriple(), why);
  if (!target)
    return llvm::createStringError(why);
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      target->createMCSubtargetInfo(machine.getTargetTriple(), "", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return llvm::createStringError(
        "--cpu: '" + cpu + "' is not a CPU LLVM knows for " +
        machine.getTargetTriple().str() +
        " (e.g. x86-64-v2, x86-64-v3, x86-64-v4, znver3, sapphirerapids)");
  machine.setCPU(cpu);
  machine.getFeatures() = llvm::SubtargetFeatures();
  auto tm = machine.createTargetMachine();
  if (!tm)
    return tm.takeError();
  const llvm::MCSubtargetInfo *sti = (*tm)->getMCSubtargetInfo();
  for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (sti->checkFeatures(std::string("+") + kv.Key)) {
      features.push_back(kv.Key);
      machine.getFeatures().AddFeature(kv.Key);
    }
  return llvm::Error::success();
}

} // namespace

llvm::Error checkCpuName(const std::string &cpu) {
  initNativeTarget();
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return machine.takeError();
  std::vector<std::string> features;
  return forCpu(*machine, cpu, features);
}

llvm::Expected<std::string> hostCodeText(ModuleOp module, bool assembly) {
  initNativeTarget();
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return machine.takeError();
  auto translated = translateFor(module, *machine);
  if (!translated)
    return translated.takeError();
  if (!translated->module)
    return llvm::createStringError("translation to LLVM IR failed");
  if (assembly)
    return CpuCode::assembly(*translated->module, *machine, /*optLevel=*/3);
  std::string text;
  llvm::raw_string_ostream os(text);
  translated->module->print(os, nullptr);
  return text;
}

unsigned defaultCompileThreads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void registerAll(DialectRegistry &registry) {
  registry.insert<mlir::tlm::TlmDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  mlir::tlm::registerPipelineInterfaces(registry);
}

Expected<std::unique_ptr<Program>> compileInOwnContext(
    llvm::function_ref<llvm::Error(ModuleOp)> build,
    llvm::function_ref<llvm::Expected<std::unique_ptr<Jit>>(
        OwningOpRef<ModuleOp>)>
        compile) {
  Expected<std::unique_ptr<Program>> program = makeError("not compiled");
  {
    DialectRegistry registry;
    registerAll(registry);
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
    if (llvm::Error err = build(*module))
      return fromLlvm(std::move(err));
    llvm::Expected<std::unique_ptr<Jit>> compiled = compile(std::move(module));
    if (compiled)
      program = std::unique_ptr<Program>(std::move(*compiled));
    else
      program = fromLlvm(compiled.takeError());
  }
  malloc_trim(0);
  return program;
}

llvm::Expected<std::unique_ptr<Jit>> Jit::compile(OwningOpRef<ModuleOp> module,
                                                  const JitOptions &options) {
  return build(std::move(module), options, nullptr);
}

llvm::Expected<std::unique_ptr<Jit>>
Jit::compileArtifact(OwningOpRef<ModuleOp> module, const JitOptions &options,
                     const ArtifactRequest &request) {
  assert(!request.path.empty() && "an artifact needs a path");
  return build(std::move(module), options, &request);
}

void Jit::recordEntries(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    Entry sig;
    FunctionType type = func.getFunctionType();
    sig.numInputs = type.getNumInputs();
    for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
      if (auto tt = dyn_cast<RankedTensorType>(t)) {
        std::vector<int64_t> shape;
        for (int64_t d : tt.getShape())
          shape.push_back(ShapedType::isDynamic(d) ? kDynamic : d);
        sig.shapes.push_back(std::move(shape));
      }
    entries_[func.getSymName().str()] = std::move(sig);
  }
}

/// The machine the code is for: the host (AVX-512 where present), another
/// CPU for a CPU artifact, any CPU of the architecture for a cuda
/// artifact's host code; position-independent for an artifact.
static llvm::Expected<llvm::orc::JITTargetMachineBuilder>
machineFor(const JitOptions &options, const ArtifactRequest *artifact,
           std::vector<std::string> &cpuFeatures) {
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return machine.takeError();
  bool cuda = options.target == Target::Cuda;
  if (artifact && !artifact->cpu.empty()) {
    if (cuda)
      return llvm::createStringError("--cpu applies to CPU artifacts only");
    if (llvm::Error err = forCpu(*machine, artifact->cpu, cpuFeatures))
      return std::move(err);
  }
  if (cuda && artifact) {
    // The host code only launches the kernels: any CPU runs it.
    machine->setCPU("generic");
    machine->getFeatures() = llvm::SubtargetFeatures();
  }
  machine->setCodeGenOptLevel(codeGenLevel(options.optLevel));
  if (artifact)
    machine->setRelocationModel(llvm::Reloc::PIC_);
  return std::move(*machine);
}

llvm::Error Jit::buildPipeline(PassManager &pm, const JitOptions &options,
                               const ArtifactRequest *artifact,
                               const std::vector<std::string> &cpuFeatures) {
  pm.enableVerifier(options.verifyEachPass);
  if (options.printIR) {
    pm.getContext()->disableMultithreading();
    pm.enableIRPrinting();
  }
  if (options.target == Target::Cuda) {
    // The kernels call libdevice (RoPE's f64 sin/cos, exp), which the
    // pipeline links from the CUDA toolkit; without it the driver would
    // reject the PTX only at load time, with a less clear message.
    if (mlir::tlm::findLibdevice().empty())
      return unavailable(
          "the GPU pipeline needs CUDA's libdevice (nvvm/libdevice/"
          "libdevice.10.bc): set CUDA_HOME to a CUDA toolkit folder");
    mlir::tlm::GpuPipelineOptions gpuOptions;
    // Shipped code: a cubin for the chip, so the driver need not compile
    // the kernels at every start, and PTX for newer GPUs.
    if (artifact)
      gpuOptions.format = "fatbin";
    gpuOptions.tensorCores = options.tensorCores;
    gpuOptions.setSwitches(options.gpuSwitches);
    mlir::tlm::buildGpuPipeline(pm, gpuOptions);
    return llvm::Error::success();
  }
  mlir::tlm::CpuPipelineOptions pipelineOptions;
  pipelineOptions.parallel = options.threads > 1;
  pipelineOptions.threads = options.threads;
  pipelineOptions.setSwitches(options.switches);
  bool otherCpu = artifact && !artifact->cpu.empty();
  mlir::tlm::CpuTarget target = mlir::tlm::withLanes(
      otherCpu ? cpuTargetFor(cpuFeatures) : hostCpuTarget(), options.lanes);
  if (options.compute != "f32" && options.compute != "bf16" &&
      options.compute != "int8")
    return llvm::createStringError("compute must be f32, bf16 or int8, found '" +
                                   options.compute + "'");
  if (options.compute == "int8" && (!target.avx512vnni || target.lanes != 16))
    return unavailable(
        std::string("--compute int8 multiplies with AVX512-VNNI's vpdpbusd "
                    "on 16-lane vectors, which ") +
        (otherCpu ? "--cpu " + artifact->cpu : std::string("this CPU")) +
        (target.avx512vnni ? " at these lanes rules out" : " lacks"));
  if (options.compute == "bf16" && (!target.avx512bf16 || target.lanes != 16))
    return unavailable(
        std::string("--compute bf16 multiplies with AVX512-BF16's vdpbf16ps "
                    "on 16-lane vectors, which ") +
        (!target.avx512bf16 ? (otherCpu ? "--cpu " + artifact->cpu
                                        : std::string("this CPU")) +
                                  " lacks"
                            : "--lanes " + std::to_string(target.lanes) +
                                  " rules out"));
  pipelineOptions.compute = options.compute == "bf16"
                                ? mlir::tlm::CpuCompute::BF16
                            : options.compute == "int8"
                                ? mlir::tlm::CpuCompute::Int8
                                : mlir::tlm::CpuCompute::F32;
  pipelineOptions.lanes = target.lanes;
  pipelineOptions.vectorRegisters = target.vectorRegisters;
  pipelineOptions.avx512 = target.avx512;
  pipelineOptions.gemvColumns =
      mlir::tlm::gemvColumns(target, options.weightBytes, options.gemvColumns);
  pipelineOptions.attentionBlock = options.attentionBlock;
  // The JIT calls ExecutionEngine's packed wrapper of each entry
  // directly: the C-interface wrappers would only add another call with
  // every descriptor field as an argument, which LLVM is slow to compile.
  pipelineOptions.cInterface = false;
  // The model's entries (lib/model) take every result from a call
  // (@block_cached, @head), which the elimination cannot see through.
  pipelineOptions.eliminateEmptyTensors = false;
  mlir::tlm::buildCpuPipeline(pm, pipelineOptions);
  return llvm::Error::success();
}

llvm::Error Jit::lower(ModuleOp module, PassManager &pm,
                       const JitOptions &options, const DiagnosticLog &log) {
  if (failed(pm.run(module)))
    return log.error("lowering failed");
  // Without the checks between passes, a pass that broke the IR is still
  // caught here, before translation would trip over it.
  if (!options.verifyEachPass && failed(mlir::verify(module)))
    return log.error("lowering produced invalid IR");
  return llvm::Error::success();
}

llvm::Expected<std::vector<Bytes>>
Jit::cpuObjects(ModuleOp module, PassManager &pm,
                const llvm::orc::JITTargetMachineBuilder &machine,
                const CpuCodegenOptions &codegen, const JitOptions &options,
                const std::string &cacheDir, const DiagnosticLog &log) {
  auto start = std::chrono::steady_clock::now();
  stats_.compileThreads = codegen.objectPath.empty() ? codegen.threads : 1;
  // The cache is skipped when the code is dumped or the IR printed: those
  // want the compile itself.
  std::optional<CompileCache> cache;
  std::string cacheKey;
  if (!cacheDir.empty() && codegen.objectPath.empty() && !options.printIR) {
    cache.emplace(cacheDir);
    cacheKey = cpuCacheKey(module, pm, machine, codegen);
    std::string whyBad;
    if (std::optional<std::vector<Bytes>> hit =
            cache->load(cacheKey, &whyBad)) {
      stats_.cacheHit = true;
      stats_.pipelineMs = msSince(start);
      return std::move(*hit);
    }
    // Not an error: the entry is compiled again and replaced.
    if (!whyBad.empty())
      llvm::errs() << "note: compile cache: " << cache->pathFor(cacheKey)
                   << " " << whyBad << "; compiling it again\n";
  }
  if (llvm::Error err = lower(module, pm, options, log))
    return std::move(err);
  stats_.pipelineMs = msSince(start);
  auto llvm = translateFor(module, machine);
  if (!llvm)
    return llvm.takeError();
  if (!llvm->module)
    return log.error("translation to LLVM IR failed");
  auto objects = CpuCode::compileObjects(
      std::move(llvm->module), std::move(llvm->context), machine,
      keysOf(entries_),
      codegen.optimizeEntries ? inlineEntries : compileWrappersQuickly,
      codegen);
  if (!objects)
    return llvm::createStringError("JIT compilation failed: " +
                                   llvm::toString(objects.takeError()));
  // A cache that cannot be written only costs the next run a compile.
  if (cache)
    llvm::consumeError(cache->store(cacheKey, *objects));
  return objects;
}

llvm::Error Jit::resolveEntries() {
  // Compiled (and linked) on lookup: resolve every entry now, so compile
  // time is paid (and measured) here rather than in the first call.
  for (auto &[name, sig] : entries_) {
    auto fn = engine_     ? engine_->lookupPacked(name)
              : artifact_ ? toLlvm(artifact_->lookupPacked(name))
                          : cpu_->lookupPacked(name);
    if (!fn)
      return llvm::createStringError(
          "JIT compilation of '" + name +
          "' failed: " + llvm::toString(fn.takeError()));
    sig.packed = *fn;
  }
  return llvm::Error::success();
}

llvm::Error Jit::startOpenMP(int threads) {
  if (threads <= 1)
    return llvm::Error::success();
  // An artifact's libomp is its own dependency, loaded with it.
  void *symbol = artifact_
                     ? artifact_->lookup("omp_set_num_threads")
                     : llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(
                           "omp_set_num_threads");
  if (Error err = setOpenMPThreads(symbol, threads))
    return llvm::createStringError("libomp (" TLM_LIBOMP "): " +
                                   err.message());
  return llvm::Error::success();
}

llvm::Error Jit::compileCpu(ModuleOp module, PassManager &pm,
                            const llvm::orc::JITTargetMachineBuilder &machine,
                            const CpuCodegenOptions &codegen,
                            const JitOptions &options,
                            const DiagnosticLog &log) {
  auto objects =
      cpuObjects(module, pm, machine, codegen, options, options.cacheDir, log);
  if (!objects)
    return objects.takeError();
  auto start = std::chrono::steady_clock::now();
  // MLIR's C runner utilities (memref.copy of strided views calls
  // memrefCopy) and, with threads, libomp (the __kmpc_* entry points).
  static const std::string runnerUtils[] = {TLM_MLIR_C_RUNNER_UTILS,
                                            TLM_LIBOMP};
  auto code = CpuCode::load(
      *objects, machine,
      llvm::ArrayRef(runnerUtils).take_front(options.threads > 1 ? 2 : 1));
  if (!code)
    return llvm::createStringError("JIT compilation failed: " +
                                   llvm::toString(code.takeError()));
  cpu_ = std::move(*code);
  if (llvm::Error err = resolveEntries())
    return err;
  stats_.codegenMs = msSince(start);
  return startOpenMP(options.threads);
}

llvm::Error
Jit::writeCpuArtifact(ModuleOp module, PassManager &pm,
                      const llvm::orc::JITTargetMachineBuilder &machine,
                      const CpuCodegenOptions &codegen,
                      const JitOptions &options,
                      const ArtifactRequest &request, const DiagnosticLog &log) {
  auto objects = cpuObjects(module, pm, machine, codegen, options,
                            /*cacheDir=*/"", log);
  if (!objects)
    return objects.takeError();
  auto start = std::chrono::steady_clock::now();
  ArtifactManifest manifest = manifestOf(machine, options, request);
  // Our own memrefCopy (lib/runtime/abi), not MLIR's runner utilities.
  std::vector<std::string> libs = {TLM_ABI_LIBRARY};
  if (options.threads > 1)
    libs.push_back(TLM_LIBOMP);
  if (llvm::Error err =
          linkArtifact(*objects, manifest, machine, libs, request.path))
    return err;
  if (!request.cpu.empty()) {
    // Code for another CPU: written, not run here.
    written_ = std::move(manifest);
    stats_.codegenMs = msSince(start);
    return llvm::Error::success();
  }
  auto loaded = toLlvm(LoadedArtifact::load(request.path));
  if (!loaded)
    return loaded.takeError();
  artifact_ = std::move(*loaded);
  if (llvm::Error err = resolveEntries())
    return err;
  stats_.codegenMs = msSince(start);
  return startOpenMP(options.threads);
}

llvm::Expected<std::unique_ptr<Jit>>
Jit::build(OwningOpRef<ModuleOp> module, const JitOptions &options,
           const ArtifactRequest *artifact) {
  initNativeTarget();
  std::unique_ptr<Jit> jit(new Jit());
  jit->stats_.optLevel = options.optLevel;
  // Each entry's tensor signature, before lowering erases it.
  jit->recordEntries(*module);
  bool cuda = options.target == Target::Cuda;
  jit->onDevice_ = cuda;
  // CpuCodegen binds the code's allocation functions to this process's.
  if (!cuda)
    jit->heap_ = {&tlm_abi_heap_peak, &tlm_abi_heap_reset_peak,
                  &tlm_abi_heap_set_limit};

  std::vector<std::string> cpuFeatures;
  auto machine = machineFor(options, artifact, cpuFeatures);
  if (!machine)
    return machine.takeError();
  DiagnosticLog log(module->getContext());
  PassManager pm(module->getContext());
  if (llvm::Error err =
          buildPipeline(pm, options, artifact, cpuFeatures))
    return std::move(err);
  if (options.configurePassManager && failed(options.configurePassManager(pm)))
    return log.error("invalid pass manager options");

  // TLM_JIT_OBJECT=path writes the generated machine code there, to read
  // with objdump (the JIT's functions have no symbols for perf).
  const char *objectPath = std::getenv("TLM_JIT_OBJECT");
  llvm::Error err = llvm::Error::success();
  if (cuda && artifact) {
    auto start = std::chrono::steady_clock::now();
    err = lower(*module, pm, options, log);
    jit->stats_.pipelineMs = msSince(start);
    if (!err)
      err = jit->writeCudaArtifact(*module, *machine, options, *artifact);
  } else if (cuda) {
    err = jit->compileCuda(*module, pm, *machine, options, objectPath, log);
    if (!err && objectPath)
      jit->engine_->dumpToObjectFile(objectPath);
  } else {
    CpuCodegenOptions codegen;
    codegen.optLevel = options.optLevel;
    codegen.llvmLoopTransforms = options.llvmLoopTransforms;
    codegen.threads = options.compileThreads;
    codegen.outlineLoopSize = options.outlineLoopSize;
    codegen.optimizeEntries = options.optimizeEntries;
    if (objectPath)
      codegen.objectPath = objectPath;
    if (options.threads > 1)
      prepareOpenMP();
    err = artifact ? jit->writeCpuArtifact(*module, pm, *machine, codegen,
                                           options, *artifact, log)
                   : jit->compileCpu(*module, pm, *machine, codegen, options,
                                     log);
  }
  if (err)
    return std::move(err);
  return jit;
}

const ArtifactManifest *Jit::artifactManifest() const {
  if (written_)
    return &*written_;
  return artifact_ ? &artifact_->manifest() : nullptr;
}

ArtifactManifest
Jit::manifestOf(const llvm::orc::JITTargetMachineBuilder &machine,
                const JitOptions &options,
                const ArtifactRequest &request) const {
  ArtifactManifest m;
  m.compiler = compilerIdentity();
  m.triple = machine.getTargetTriple().str();
  m.cpu = machine.getCPU();
  m.features = machine.getFeatures().getString();
  m.threads = options.threads;
  m.compute = options.compute;
  m.model = request.model;
  for (const auto &[name, sig] : entries_) {
    ArtifactEntry entry;
    entry.name = name;
    entry.numInputs = sig.numInputs;
    entry.shapes = sig.shapes;
    m.entries.push_back(std::move(entry));
  }
  return m;
}

llvm::Error Jit::call(llvm::StringRef entry,
                      llvm::ArrayRef<TensorRef> args) const {
  return toLlvm(Program::call(entry, Span(args.data(), args.size())));
}

} // namespace tlm::runtime
