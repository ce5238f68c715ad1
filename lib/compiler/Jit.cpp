//===- Jit.cpp - compile a tlm module and call its entry points -----------===//

#include "lib/compiler/Jit.h"
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
#include "llvm/Transforms/IPO/AlwaysInliner.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace tlm::runtime {
using namespace mlir;

namespace {
double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// The entries are `alwaysinline` (see tlm-memref-entry): inlined here into
/// the engine's packed wrappers (`_mlir_<name>`), which are then compiled
/// without optimization. They unpack memref descriptors, gather the
/// prompt's embedding rows (inline with one thread, an OpenMP-outlined and
/// optimized function with more) and call the block and head functions,
/// yet instruction selection of their thousand-odd descriptor fields took
/// ~0.1 s each at O3; FastISel takes a fraction.
void compileWrappersQuickly(llvm::Module &m) {
  llvm::PassBuilder pb;
  AnalysisManagers am(pb);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  mpm.run(m, am.mam);
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && f.getName().starts_with("_mlir_")) {
      f.addFnAttr(llvm::Attribute::NoInline);
      f.addFnAttr(llvm::Attribute::OptimizeNone);
    }
}
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
     << "\npipeline ";
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

llvm::Error Jit::compileGpuHost(ModuleOp module,
                                std::unique_ptr<llvm::TargetMachine> tm,
                                llvm::CodeGenOptLevel level, unsigned optLevel,
                                bool dumpObject) {
  ExecutionEngineOptions engineOptions;
  // `transformer` is a function_ref: the std::function must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm.get());
  engineOptions.transformer = optimize;
  engineOptions.jitCodeGenOptLevel = level;
  engineOptions.enableObjectDump = dumpObject;
  static const llvm::StringRef runnerUtils[] = {TLM_MLIR_C_RUNNER_UTILS};
  engineOptions.sharedLibPaths = runnerUtils;
  auto engine = ExecutionEngine::create(module, engineOptions, std::move(tm));
  if (!engine)
    return engine.takeError();
  engine_ = std::move(*engine);
  // The host code calls mgpu*; they are ours (CudaRuntime.cpp).
  engine_->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (auto [name, address] : cuda::mgpuSymbols())
      map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                             llvm::JITSymbolFlags::Exported};
    return map;
  });
  return llvm::Error::success();
}

llvm::Error
Jit::writeCudaArtifact(ModuleOp module,
                       const llvm::orc::JITTargetMachineBuilder &machine,
                       const JitOptions &options) {
  auto tm = llvm::orc::JITTargetMachineBuilder(machine).createTargetMachine();
  if (!tm)
    return tm.takeError();
  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, *llvmContext);
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  std::vector<std::string> entries, imports;
  for (auto &entry : entries_)
    entries.push_back(entry.first);
  CpuCodegenOptions codegen;
  codegen.optLevel = options.optLevel;
  // The host code is launches and allocations: one part is quick enough.
  codegen.threads = 1;
  auto objects = CpuCode::compileObjects(
      std::move(llvmModule), std::move(llvmContext), machine, entries,
      [&](llvm::Module &m) {
        compileWrappersQuickly(m);
        imports = detachCudaRuntime(m);
      },
      codegen);
  if (!objects)
    return llvm::createStringError("compiling the host code failed: " +
                                   llvm::toString(objects.takeError()));
  ArtifactManifest manifest = manifestOf(machine, options);
  manifest.target = "cuda";
  manifest.chip = mlir::tlm::GpuPipelineOptions().chip;
  manifest.imports = std::move(imports);
  manifest.threads = 1;
  if (llvm::Error err = linkArtifact(*objects, manifest, machine,
                                     {TLM_ABI_LIBRARY}, options.artifactPath))
    return err;
  // Run where a GPU is; written, not loaded, here.
  written_ = std::move(manifest);
  onDevice_ = true;
  return llvm::Error::success();
}

llvm::Error checkCpuName(const std::string &cpu) {
  initNativeTarget();
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return machine.takeError();
  std::vector<std::string> features;
  return forCpu(*machine, cpu, features);
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

llvm::Expected<std::unique_ptr<Jit>> Jit::compile(OwningOpRef<ModuleOp> module,
                                                  const JitOptions &options) {
  initNativeTarget();

  std::unique_ptr<Jit> jit(new Jit());
  jit->stats_.optLevel = options.optLevel;
  // Remember each entry's tensor signature before lowering erases it.
  for (auto func : module->getOps<func::FuncOp>()) {
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
    jit->entries_[func.getSymName().str()] = std::move(sig);
  }

  // Lower, collecting diagnostics into the returned error.
  MLIRContext *ctx = module->getContext();
  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    diagOS << d.getLocation() << ": " << d << "\n";
    return success();
  });
  auto start = std::chrono::steady_clock::now();
  PassManager pm(ctx);
  pm.enableVerifier(options.verifyEachPass);
  if (options.printIR) {
    ctx->disableMultithreading();
    pm.enableIRPrinting();
  }
  bool cuda = options.target == Target::Cuda;
  jit->onDevice_ = cuda;
  // CpuCodegen binds the code's allocation functions to this process's.
  if (!cuda)
    jit->heap_ = {&tlm_abi_heap_peak, &tlm_abi_heap_reset_peak,
                  &tlm_abi_heap_set_limit};

  // Code for the host CPU (AVX-512 where present), or for --cpu.
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
  std::vector<std::string> cpuFeatures;
  if (!options.cpu.empty()) {
    if (cuda || options.artifactPath.empty())
      return llvm::createStringError(
          "--cpu applies to CPU artifacts (tlm-run compile) only");
    if (llvm::Error err = forCpu(*jtmb, options.cpu, cpuFeatures))
      return std::move(err);
  }
  if (cuda) {
    // The kernels call libdevice (RoPE's f64 sin/cos, exp), which the
    // pipeline links from the CUDA toolkit; without it the driver would
    // reject the PTX only at load time, with a less clear message.
    if (mlir::tlm::findLibdevice().empty())
      return unavailable(
          "the GPU pipeline needs CUDA's libdevice (nvvm/libdevice/"
          "libdevice.10.bc): set CUDA_HOME to a CUDA toolkit folder");
    mlir::tlm::GpuPipelineOptions gpuOptions;
    if (!options.artifactPath.empty()) {
      // Shipped code: a cubin for the chip, so the driver need not compile
      // the kernels at every start, and PTX for newer GPUs. The host code
      // only launches them: any CPU of the architecture runs it.
      gpuOptions.format = "fatbin";
      jtmb->setCPU("generic");
      jtmb->getFeatures() = llvm::SubtargetFeatures();
    }
    gpuOptions.tensorCores = options.tensorCores;
    gpuOptions.setSwitches(options.gpuSwitches);
    mlir::tlm::buildGpuPipeline(pm, gpuOptions);
  } else {
    mlir::tlm::CpuPipelineOptions pipelineOptions;
    pipelineOptions.parallel = options.threads > 1;
    pipelineOptions.threads = options.threads;
    pipelineOptions.setSwitches(options.switches);
    mlir::tlm::CpuTarget target = mlir::tlm::withLanes(
        options.cpu.empty() ? hostCpuTarget() : cpuTargetFor(cpuFeatures),
        options.lanes);
    pipelineOptions.lanes = target.lanes;
    pipelineOptions.vectorRegisters = target.vectorRegisters;
    pipelineOptions.avx512 = target.avx512;
    pipelineOptions.gemvColumns = mlir::tlm::gemvColumns(
        target, options.weightBytes, options.gemvColumns);
    // The JIT calls ExecutionEngine's packed wrapper of each entry
    // directly: the C-interface wrappers would only add another call with
    // every descriptor field as an argument, which LLVM is slow to compile.
    pipelineOptions.cInterface = false;
    // The model's entries (lib/model) take every result from a call
    // (@block_cached, @head), which the elimination cannot see through: it
    // left small.json's IR unchanged and took 60-70 ms of the ~0.45 s of
    // passes. A test's single-function module only copies its output once.
    pipelineOptions.eliminateEmptyTensors = false;
    mlir::tlm::buildCpuPipeline(pm, pipelineOptions);
  }
  if (options.configurePassManager && failed(options.configurePassManager(pm)))
    return llvm::createStringError("invalid pass manager options:\n" +
                                   diagnostics);

  llvm::CodeGenOptLevel level =
      options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                              : llvm::CodeGenOptLevel::Default;
  jtmb->setCodeGenOptLevel(level);
  // MLIR's C runner utilities (memref.copy of strided views calls
  // memrefCopy) and, with threads, libomp (the __kmpc_* entry points).
  static const std::string runnerUtils[] = {TLM_MLIR_C_RUNNER_UTILS,
                                            TLM_LIBOMP};
  bool openmp = !cuda && options.threads > 1;
  llvm::ArrayRef<std::string> libs =
      llvm::ArrayRef(runnerUtils).take_front(openmp ? 2 : 1);
  if (openmp)
    prepareOpenMP();
  // TLM_JIT_OBJECT=path writes the generated machine code there, to read
  // with objdump (the JIT's functions have no symbols for perf).
  const char *objectPath = std::getenv("TLM_JIT_OBJECT");
  CpuCodegenOptions codegen;
  codegen.optLevel = options.optLevel;
  codegen.llvmLoopTransforms = options.llvmLoopTransforms;
  codegen.threads = options.compileThreads;
  codegen.outlineLoopSize = options.outlineLoopSize;
  if (objectPath)
    codegen.objectPath = objectPath;
  // An artifact is a shared library: position-independent code.
  bool artifact = !options.artifactPath.empty();
  if (artifact)
    jtmb->setRelocationModel(llvm::Reloc::PIC_);

  // The CPU code from the cache when an entry for exactly this compile is
  // there (not when the code is dumped or the IR printed: those want the
  // compile itself).
  std::optional<CompileCache> cache;
  std::string cacheKey;
  std::vector<Bytes> objects;
  if (!cuda && !artifact && !options.cacheDir.empty() && !objectPath &&
      !options.printIR) {
    cache.emplace(options.cacheDir);
    cacheKey = cpuCacheKey(*module, pm, *jtmb, codegen);
    if (std::optional<std::vector<Bytes>> hit = cache->load(cacheKey)) {
      objects = std::move(*hit);
      jit->stats_.cacheHit = true;
    }
  }

  if (!jit->stats_.cacheHit) {
    if (failed(pm.run(*module)))
      return llvm::createStringError("lowering failed:\n" + diagnostics);
    // Without the checks between passes, a pass that broke the IR is still
    // caught here, before translation would trip over it.
    if (!options.verifyEachPass && failed(mlir::verify(*module)))
      return llvm::createStringError("lowering produced invalid IR:\n" +
                                     diagnostics);
  }
  jit->stats_.pipelineMs = msSince(start);

  start = std::chrono::steady_clock::now();
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return tm.takeError();
  if (cuda && artifact) {
    if (llvm::Error err = jit->writeCudaArtifact(*module, *jtmb, options))
      return std::move(err);
    jit->stats_.codegenMs = msSince(start);
    return jit;
  }
  if (cuda) {
    if (llvm::Error err = jit->compileGpuHost(*module, std::move(*tm), level,
                                              options.optLevel, objectPath))
      return llvm::createStringError(
          "JIT compilation failed: " + llvm::toString(std::move(err)) +
          (diagnostics.empty() ? "" : "\n" + diagnostics));
  } else {
    if (!jit->stats_.cacheHit) {
      auto llvmContext = std::make_unique<llvm::LLVMContext>();
      std::unique_ptr<llvm::Module> llvmModule =
          translateModuleToLLVMIR(*module, *llvmContext);
      if (!llvmModule)
        return llvm::createStringError("translation to LLVM IR failed:\n" +
                                       diagnostics);
      llvmModule->setDataLayout((*tm)->createDataLayout());
      llvmModule->setTargetTriple((*tm)->getTargetTriple());
      std::vector<std::string> entries;
      for (auto &entry : jit->entries_)
        entries.push_back(entry.first);
      auto compiled = CpuCode::compileObjects(
          std::move(llvmModule), std::move(llvmContext), *jtmb, entries,
          compileWrappersQuickly, codegen);
      if (!compiled)
        return llvm::createStringError("JIT compilation failed: " +
                                       llvm::toString(compiled.takeError()));
      objects = std::move(*compiled);
      // A cache that cannot be written only costs the next run a compile.
      if (cache)
        llvm::consumeError(cache->store(cacheKey, objects));
    }
    if (artifact) {
      ArtifactManifest manifest = jit->manifestOf(*jtmb, options);
      // Our own memrefCopy (lib/runtime/abi), not MLIR's runner utilities.
      std::vector<std::string> artifactLibs = {TLM_ABI_LIBRARY};
      if (openmp)
        artifactLibs.push_back(TLM_LIBOMP);
      if (llvm::Error err = linkArtifact(objects, manifest, *jtmb, artifactLibs,
                                         options.artifactPath))
        return std::move(err);
      if (!options.cpu.empty()) {
        // Code for another CPU: written, not run here.
        jit->written_ = std::move(manifest);
        jit->stats_.codegenMs = msSince(start);
        return jit;
      }
      auto loaded = toLlvm(LoadedArtifact::load(options.artifactPath));
      if (!loaded)
        return loaded.takeError();
      jit->artifact_ = std::move(*loaded);
    } else {
      auto code = CpuCode::load(objects, *jtmb, libs);
      if (!code)
        return llvm::createStringError("JIT compilation failed: " +
                                       llvm::toString(code.takeError()));
      jit->cpu_ = std::move(*code);
    }
    jit->stats_.compileThreads =
        codegen.objectPath.empty() ? codegen.threads : 1;
  }
  // Compiled (and linked) on lookup: resolve every entry now, so compile
  // time is paid (and measured) here rather than in the first call.
  for (auto &[name, sig] : jit->entries_) {
    auto fn = cuda             ? jit->engine_->lookupPacked(name)
              : jit->artifact_ ? toLlvm(jit->artifact_->lookupPacked(name))
                               : jit->cpu_->lookupPacked(name);
    if (!fn)
      return llvm::createStringError(
          "JIT compilation of '" + name +
          "' failed: " + llvm::toString(fn.takeError()));
    sig.packed = *fn;
  }
  if (cuda) {
    // Run the module constructors now (the engine would at the first call):
    // they hand every kernel to the driver, whose PTX compilation belongs
    // to compile time, and whose errors belong here.
    jit->engine_->initialize();
    if (Error err = cuda::takeError())
      return unavailable("loading the GPU kernels failed: " + err.message());
  }
  jit->stats_.codegenMs = msSince(start);
  if (objectPath && cuda)
    jit->engine_->dumpToObjectFile(objectPath);
  if (openmp) {
    // An artifact's libomp is its own dependency, loaded with it.
    void *symbol = jit->artifact_
                       ? jit->artifact_->lookup("omp_set_num_threads")
                       : llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(
                             "omp_set_num_threads");
    if (Error err = setOpenMPThreads(symbol, options.threads))
      return llvm::createStringError("libomp (" TLM_LIBOMP "): " +
                                     err.message());
  }
  return jit;
}

const ArtifactManifest *Jit::artifactManifest() const {
  if (written_)
    return &*written_;
  return artifact_ ? &artifact_->manifest() : nullptr;
}

ArtifactManifest
Jit::manifestOf(const llvm::orc::JITTargetMachineBuilder &machine,
                const JitOptions &options) const {
  ArtifactManifest m;
  m.compiler = compilerIdentity();
  m.triple = machine.getTargetTriple().str();
  m.cpu = machine.getCPU();
  m.features = machine.getFeatures().getString();
  m.threads = options.threads;
  m.model = options.artifactModel;
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
