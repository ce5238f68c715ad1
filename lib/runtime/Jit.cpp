//===- Jit.cpp - compile a tlm module and call its entry points -----------===//

#include "lib/runtime/Jit.h"
#include "lib/runtime/Artifact.h"
#include "lib/runtime/CompileCache.h"
#include "lib/runtime/CudaRuntime.h"
#include "lib/runtime/HostTarget.h"

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
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/TargetSelect.h"
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

/// Calls a packed entry. UBSan's -fsanitize=function reads a type
/// signature just before the callee, which JIT-compiled code does not have
/// (and its first function starts a page, so the read faults): this one call
/// is left unchecked.
#if defined(__clang__)
__attribute__((no_sanitize("function"), noinline))
#endif
void invokePacked(void (*fn)(void **), void **args) {
  fn(args);
}

std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return s + ")";
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
/// Workers that spin forever collapse when the host is busy, and workers
/// that sleep at once pay a wake-up per loop nest (10x slower decode on tiny
/// models, measured): spin at most 1 ms after a loop, then sleep. Must be
/// set before libomp starts; the user's settings win.
void boundOpenMPSpin() {
  if (!std::getenv("OMP_WAIT_POLICY"))
    ::setenv("KMP_BLOCKTIME", "1", /*overwrite=*/0);
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

unsigned defaultCompileThreads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void registerAll(DialectRegistry &registry) {
  registry.insert<mlir::tlm::TlmDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
}

llvm::Expected<std::unique_ptr<Jit>> Jit::compile(OwningOpRef<ModuleOp> module,
                                                  const JitOptions &options) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

  std::unique_ptr<Jit> jit(new Jit());
  jit->optLevel_ = options.optLevel;
  // Remember each entry's tensor signature before lowering erases it.
  for (auto func : module->getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    Signature sig;
    FunctionType type = func.getFunctionType();
    sig.numInputs = type.getNumInputs();
    for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
      if (auto tt = dyn_cast<RankedTensorType>(t))
        sig.shapes.push_back(std::vector<int64_t>(tt.getShape()));
    jit->signatures_[func.getSymName().str()] = std::move(sig);
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
  jit->cuda_ = cuda;
  if (cuda) {
    // The kernels call libdevice (RoPE's f64 sin/cos, exp), which the
    // pipeline links from the CUDA toolkit; without it the driver would
    // reject the PTX only at load time, with a less clear message.
    if (mlir::tlm::findLibdevice().empty())
      return cuda::unavailable(
          "the GPU pipeline needs CUDA's libdevice (nvvm/libdevice/"
          "libdevice.10.bc): set CUDA_HOME to a CUDA toolkit folder");
    mlir::tlm::buildGpuPipeline(pm);
  } else {
    mlir::tlm::CpuPipelineOptions pipelineOptions;
    pipelineOptions.parallel = options.threads > 1;
    pipelineOptions.threads = options.threads;
    pipelineOptions.setSwitches(options.switches);
    mlir::tlm::CpuTarget target =
        mlir::tlm::withLanes(hostCpuTarget(), options.lanes);
    pipelineOptions.lanes = target.lanes;
    pipelineOptions.vectorRegisters = target.vectorRegisters;
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

  // Code for the host CPU (AVX-512 where present) at the requested level.
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
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
    boundOpenMPSpin();
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
  bool artifact = !cuda && !options.artifactPath.empty();
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
      jit->cacheHit_ = true;
    }
  }

  if (!jit->cacheHit_) {
    if (failed(pm.run(*module)))
      return llvm::createStringError("lowering failed:\n" + diagnostics);
    // Without the checks between passes, a pass that broke the IR is still
    // caught here, before translation would trip over it.
    if (!options.verifyEachPass && failed(mlir::verify(*module)))
      return llvm::createStringError("lowering produced invalid IR:\n" +
                                     diagnostics);
  }
  jit->pipelineMs_ = msSince(start);

  start = std::chrono::steady_clock::now();
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return tm.takeError();
  if (cuda) {
    if (llvm::Error err = jit->compileGpuHost(*module, std::move(*tm), level,
                                              options.optLevel, objectPath))
      return llvm::createStringError(
          "JIT compilation failed: " + llvm::toString(std::move(err)) +
          (diagnostics.empty() ? "" : "\n" + diagnostics));
  } else {
    if (!jit->cacheHit_) {
      auto llvmContext = std::make_unique<llvm::LLVMContext>();
      std::unique_ptr<llvm::Module> llvmModule =
          translateModuleToLLVMIR(*module, *llvmContext);
      if (!llvmModule)
        return llvm::createStringError("translation to LLVM IR failed:\n" +
                                       diagnostics);
      llvmModule->setDataLayout((*tm)->createDataLayout());
      llvmModule->setTargetTriple((*tm)->getTargetTriple());
      std::vector<std::string> entries;
      for (auto &entry : jit->signatures_)
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
      auto loaded = LoadedArtifact::load(options.artifactPath);
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
    jit->compileThreads_ = codegen.objectPath.empty() ? codegen.threads : 1;
  }
  // Compiled (and linked) on lookup: resolve every entry now, so compile
  // time is paid (and measured) here rather than in the first call.
  for (auto &[name, sig] : jit->signatures_) {
    auto fn = cuda             ? jit->engine_->lookupPacked(name)
              : jit->artifact_ ? jit->artifact_->lookupPacked(name)
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
    if (llvm::Error err = cuda::takeError())
      return cuda::unavailable("loading the GPU kernels failed: " +
                               llvm::toString(std::move(err)));
  }
  jit->codegenMs_ = msSince(start);
  if (objectPath && cuda)
    jit->engine_->dumpToObjectFile(objectPath);
  if (openmp)
    if (llvm::Error err = jit->setOpenMPThreads(options.threads))
      return std::move(err);
  return jit;
}

const ArtifactManifest *Jit::artifactManifest() const {
  return artifact_ ? &artifact_->manifest() : nullptr;
}

llvm::Error Jit::setOpenMPThreads(int threads) {
  using SetThreads = void (*)(int);
  // An artifact's libomp is its own dependency, loaded with it.
  void *symbol = artifact_
                     ? artifact_->lookup("omp_set_num_threads")
                     : llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(
                           "omp_set_num_threads");
  if (!symbol)
    return llvm::createStringError("libomp (" TLM_LIBOMP
                                   ") did not load: cannot run on " +
                                   std::to_string(threads) + " threads");
  // Process-wide: every Jit in this process runs on the last count set.
  reinterpret_cast<SetThreads>(symbol)(threads);
  return llvm::Error::success();
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
  for (const auto &[name, sig] : signatures_) {
    ArtifactEntry entry;
    entry.name = name;
    entry.numInputs = sig.numInputs;
    for (const std::vector<int64_t> &shape : sig.shapes) {
      std::vector<int64_t> dims;
      for (int64_t d : shape)
        dims.push_back(ShapedType::isDynamic(d) ? -1 : d);
      entry.shapes.push_back(std::move(dims));
    }
    m.entries.push_back(std::move(entry));
  }
  return m;
}

llvm::Expected<std::unique_ptr<Jit>>
Jit::loadArtifact(const std::string &path) {
  auto start = std::chrono::steady_clock::now();
  // Before the artifact brings in its libomp (it reads the setting at start).
  boundOpenMPSpin();
  auto loaded = LoadedArtifact::load(path);
  if (!loaded)
    return loaded.takeError();
  std::unique_ptr<Jit> jit(new Jit());
  jit->artifact_ = std::move(*loaded);
  const ArtifactManifest &m = jit->artifact_->manifest();
  for (const ArtifactEntry &entry : m.entries) {
    Signature sig;
    sig.numInputs = entry.numInputs;
    for (const std::vector<int64_t> &shape : entry.shapes) {
      std::vector<int64_t> dims;
      for (int64_t d : shape)
        dims.push_back(d < 0 ? ShapedType::kDynamic : d);
      sig.shapes.push_back(std::move(dims));
    }
    auto fn = jit->artifact_->lookupPacked(entry.name);
    if (!fn)
      return fn.takeError();
    sig.packed = *fn;
    jit->signatures_[entry.name] = std::move(sig);
  }
  if (m.threads > 1)
    if (llvm::Error err = jit->setOpenMPThreads(m.threads))
      return std::move(err);
  jit->codegenMs_ = msSince(start);
  return jit;
}

llvm::Error Jit::call(llvm::StringRef entry, llvm::ArrayRef<TensorRef> args) {
  auto it = signatures_.find(entry);
  if (it == signatures_.end())
    return llvm::createStringError("no entry point named '" + entry.str() +
                                   "'");
  const Signature &sig = it->second;
  if (args.size() != sig.shapes.size())
    return llvm::createStringError(
        entry.str() + ": expected " + std::to_string(sig.shapes.size()) +
        " buffers (" + std::to_string(sig.numInputs) + " inputs, " +
        std::to_string(sig.shapes.size() - sig.numInputs) +
        " outputs), found " + std::to_string(args.size()));

  // One memref descriptor per buffer: {allocated, aligned, offset,
  // sizes[rank], strides[rank]}, all 64-bit, identity (row-major) layout.
  std::vector<std::vector<int64_t>> descriptors(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const std::vector<int64_t> &expected = sig.shapes[i];
    const std::vector<int64_t> &shape = args[i].shape;
    bool ok = expected.size() == shape.size();
    for (size_t d = 0; ok && d < shape.size(); ++d)
      ok = shape[d] >= 0 &&
           (ShapedType::isDynamic(expected[d]) || expected[d] == shape[d]);
    if (!ok)
      return llvm::createStringError(
          entry.str() + ": buffer " + std::to_string(i) + " has shape " +
          shapeStr(shape) + ", expected " + shapeStr(expected));
    std::vector<int64_t> &desc = descriptors[i];
    int64_t rank = shape.size();
    desc.resize(3 + 2 * rank);
    auto ptr = reinterpret_cast<int64_t>(args[i].data);
    desc[0] = desc[1] = ptr;
    desc[2] = 0;
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      desc[3 + d] = shape[d];
      desc[3 + rank + d] = stride;
      stride *= shape[d];
    }
  }
  // The packed wrapper takes a pointer to each scalar argument of the
  // lowered function: every field of every descriptor, in order.
  std::vector<void *> packed;
  for (std::vector<int64_t> &desc : descriptors)
    for (int64_t &field : desc)
      packed.push_back(&field);
  invokePacked(sig.packed, packed.data());
  // The host code has waited for its kernels; a failed launch or copy was
  // recorded on the way.
  if (cuda_)
    if (llvm::Error err = cuda::takeError())
      return cuda::unavailable(
          entry.str() + " on the GPU: " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}

} // namespace tlm::runtime
