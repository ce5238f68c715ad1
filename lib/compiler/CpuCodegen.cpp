//===- CpuCodegen.cpp - LLVM module to running code, on several threads ---===//

#include "lib/compiler/CpuCodegen.h"
#include "lib/runtime/abi/Alloc.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/DeadStoreElimination.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/GVN.h"
#include "llvm/Transforms/Scalar/LICM.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/LoopRotation.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

#include <atomic>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace tlm::runtime {

namespace {

/// `void _mlir_<f>(void **args)`: loads each argument through its pointer
/// in `args`, calls `f`, stores a result through the pointer after them.
void addPackedWrapper(llvm::Module &m, llvm::Function &f) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *wrapper = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, "_mlir_" + f.getName(), m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::Value *args = wrapper->getArg(0);
  llvm::SmallVector<llvm::Value *> values;
  for (llvm::Argument &arg : f.args()) {
    llvm::Value *slot =
        b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, arg.getArgNo()));
    values.push_back(b.CreateLoad(arg.getType(), slot));
  }
  llvm::Value *result = b.CreateCall(&f, values);
  if (!result->getType()->isVoidTy()) {
    llvm::Value *slot =
        b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, f.arg_size()));
    b.CreateStore(result, slot);
  }
  b.CreateRetVoid();
}

/// Moves each top-level loop of at least `minSize` instructions into a
/// function of its own (LLVM's CodeExtractor) when at least as much stays
/// behind: the split below deals whole functions, and on one thread the
/// block is one function, its attention loop nest half of it.
void outlineBigLoops(llvm::Module &m, uint64_t minSize) {
  llvm::SmallVector<llvm::Function *> candidates;
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !f.hasOptNone() &&
        f.getInstructionCount() >= 2 * minSize)
      candidates.push_back(&f);
  for (llvm::Function *f : candidates) {
    llvm::DominatorTree dt(*f);
    llvm::LoopInfo loops(dt);
    uint64_t total = f->getInstructionCount();
    llvm::SmallVector<llvm::SmallVector<llvm::BasicBlock *>> regions;
    for (llvm::Loop *loop : loops) {
      uint64_t size = 0;
      for (llvm::BasicBlock *bb : loop->blocks())
        size += bb->size();
      if (size >= minSize && total - size >= minSize &&
          loop->getLoopPreheader())
        regions.emplace_back(loop->blocks());
    }
    if (regions.empty())
      continue;
    llvm::CodeExtractorAnalysisCache cache(*f);
    for (llvm::ArrayRef<llvm::BasicBlock *> blocks : regions) {
      llvm::CodeExtractor extractor(blocks, &dt);
      if (!extractor.isEligible())
        continue;
      // Kept out of line: inlining it back would undo the split.
      if (llvm::Function *loop = extractor.extractCodeRegion(cache))
        loop->addFnAttr(llvm::Attribute::NoInline);
    }
  }
}

/// One part of a split module: its bitcode, and whether it holds only
/// unoptimized (`optnone`) functions, which then compile at CodeGen O0.
struct Part {
  Bytes bitcode;
  bool quick = false;
};

/// Splits `m` into at most `n` parts, then one per `optnone` function (the
/// entry wrappers: O3 codegen still ran the greedy register allocator over
/// their thousands of descriptor loads; alone each compiles faster at O0,
/// on whichever thread is free first). The other functions are dealt
/// largest first to the part with the fewest instructions so far. Local
/// functions and variables become external (a part may call an
/// OpenMP-outlined function another part defines; names are unique within a
/// module); small local constants are copied into every part, which may then
/// fold them, and large ones (a GPU module's kernels, whose copies made up
/// most of a cuda artifact) live in part 0 alone.
std::vector<Part> split(llvm::Module &m, unsigned n) {
  constexpr uint64_t kCopiedConstantBytes = 4096;
  const llvm::DataLayout &layout = m.getDataLayout();
  for (llvm::Function &f : m)
    if (f.hasLocalLinkage())
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
  for (llvm::GlobalVariable &g : m.globals())
    if (g.hasLocalLinkage() &&
        (!g.isConstant() ||
         layout.getTypeAllocSize(g.getValueType()) > kCopiedConstantBytes))
      g.setLinkage(llvm::GlobalValue::ExternalLinkage);

  llvm::SmallVector<llvm::Function *> functions, quick;
  for (llvm::Function &f : m)
    if (!f.isDeclaration())
      (f.hasOptNone() ? quick : functions).push_back(&f);
  // Largest first; equal sizes by name, so the split is reproducible.
  auto size = [](const llvm::Function *f) -> uint64_t {
    return f->getInstructionCount() + 1;
  };
  llvm::sort(functions, [&](llvm::Function *a, llvm::Function *b) {
    return std::make_pair(size(b), a->getName()) <
           std::make_pair(size(a), b->getName());
  });
  std::vector<uint64_t> load(n, 0);
  llvm::DenseMap<const llvm::Function *, unsigned> partOf;
  for (llvm::Function *f : functions) {
    // Part 0 takes the first (largest) function, so it is never empty.
    unsigned p = std::min_element(load.begin(), load.end()) - load.begin();
    partOf[f] = p;
    load[p] += size(f);
  }
  for (auto [i, f] : llvm::enumerate(quick))
    partOf[f] = n + i;

  std::vector<Part> parts;
  for (unsigned p = 0; p < n + quick.size(); ++p) {
    if (p > 0 && p < n && load[p] == 0)
      continue;
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(m, map, [&](const llvm::GlobalValue *gv) {
          if (auto *f = llvm::dyn_cast<llvm::Function>(gv))
            return partOf.lookup(f) == p;
          if (gv->hasLocalLinkage())
            return true; // a constant, copied into every part
          return p == 0;
        });
    parts.push_back({{}, /*quick=*/p >= n});
    llvm::raw_svector_ostream os(parts.back().bitcode);
    llvm::WriteBitcodeToFile(*part, os);
  }
  return parts;
}

/// The IR passes for code whose loops tlm's passes have vectorized and
/// unrolled: the cleanup the MLIR lowering leaves to LLVM (scalarized
/// memref descriptors, address arithmetic per access, loop-invariant loads
/// and index math, loops in while form) and nothing else: SROA, early CSE,
/// CFG simplification, InstCombine, loop rotation, LICM, GVN, InstCombine
/// again, dead stores, CFG. LLVM's O3 pipeline spent most of its time
/// rerunning these (InstCombine eight times) and on loop passes with
/// nothing left to do. This one cuts the LLVM side's time markedly, with
/// prefill and decode as fast (docs/jit.md#the-ir-pipeline).
llvm::ModulePassManager cleanupPipeline() {
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
  fpm.addPass(llvm::SimplifyCFGPass());
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LoopRotatePass()));
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(
      llvm::LICMPass(llvm::LICMOptions()), /*UseMemorySSA=*/true));
  fpm.addPass(llvm::GVNPass());
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::DSEPass());
  fpm.addPass(llvm::SimplifyCFGPass());
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  return mpm;
}

/// The IR passes at `optLevel`: LLVM's default pipeline with
/// `loopTransforms` (its loop unroller and loop and SLP vectorizers; only
/// on request, `--llvm-loops on`), otherwise the cleanup above. (LLVM's default
/// without those transforms was the pipeline before: its unroller, run again on
/// loops our passes had unrolled, made small.json's codegen markedly slower for
/// no measurable speed.)
void optimize(llvm::Module &m, llvm::TargetMachine &tm, unsigned optLevel,
              bool loopTransforms) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, tuning);
  AnalysisManagers am(pb);
  llvm::ModulePassManager mpm;
  if (optLevel == 0)
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  else if (!loopTransforms)
    mpm = cleanupPipeline();
  else if (optLevel == 1)
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1);
  else if (optLevel == 2)
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  else
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, am.mam);
}

/// Switches off LLVM's loop strength reduction in the codegen pipeline, for
/// the whole process: LLVM exposes it only as a command-line option. It
/// took a large share of the codegen of the part holding the attention nest
/// and sped nothing up measurably: tlm's loops come unrolled, with their
/// addresses computed once per block (docs/jit.md#the-ir-pipeline).
void disableLoopStrengthReduction() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (llvm::cl::Option *option =
            llvm::cl::getRegisteredOptions().lookup("disable-lsr"))
      option->addOccurrence(0, "disable-lsr", "true");
  });
}

/// Optimizes `m` at `optLevel` and compiles it to an object file.
llvm::Expected<Bytes> compileToObject(llvm::Module &m,
                                      llvm::orc::JITTargetMachineBuilder jtmb,
                                      unsigned optLevel, bool loopTransforms) {
  disableLoopStrengthReduction();
  auto tm = jtmb.createTargetMachine();
  if (!tm)
    return tm.takeError();
  optimize(m, **tm, optLevel, loopTransforms);
  Bytes object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr,
                                 llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the host target cannot emit objects");
  pm.run(m);
  return object;
}

/// The parts on `threads` threads, each part in its own LLVMContext.
llvm::Expected<std::vector<Bytes>>
compileParts(const std::vector<Part> &parts,
             const llvm::orc::JITTargetMachineBuilder &jtmb,
             const CpuCodegenOptions &options, unsigned threads) {
  std::vector<Bytes> objects(parts.size());
  std::vector<std::string> errors(parts.size());
  auto compilePart = [&](size_t i) {
    llvm::LLVMContext ctx;
    const Bytes &bitcode = parts[i].bitcode;
    llvm::MemoryBufferRef buffer(
        llvm::StringRef(bitcode.data(), bitcode.size()), "part");
    llvm::Expected<std::unique_ptr<llvm::Module>> m =
        llvm::parseBitcodeFile(buffer, ctx);
    llvm::orc::JITTargetMachineBuilder partJtmb = jtmb;
    if (parts[i].quick)
      partJtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
    llvm::Expected<Bytes> object =
        m ? compileToObject(**m, partJtmb,
                            parts[i].quick ? 0 : options.optLevel,
                            options.llvmLoopTransforms)
          : llvm::Expected<Bytes>(m.takeError());
    if (object)
      objects[i] = std::move(*object);
    else
      errors[i] = llvm::toString(object.takeError());
  };
  // Workers take the next part until none is left (parts come largest
  // first, the quick ones last).
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < parts.size(); i = next++)
      compilePart(i);
  };
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads && t < parts.size(); ++t)
    workers.emplace_back(work);
  work();
  for (std::thread &t : workers)
    t.join();
  for (const std::string &error : errors)
    if (!error.empty())
      return llvm::createStringError(error);
  return objects;
}

} // namespace

llvm::Expected<std::vector<Bytes>>
CpuCode::compileObjects(std::unique_ptr<llvm::Module> module,
                        std::unique_ptr<llvm::LLVMContext> context,
                        llvm::orc::JITTargetMachineBuilder machine,
                        llvm::ArrayRef<std::string> entries,
                        llvm::function_ref<void(llvm::Module &)> prepare,
                        const CpuCodegenOptions &options) {
  for (const std::string &name : entries) {
    llvm::Function *f = module->getFunction(name);
    if (!f || f->isDeclaration())
      return llvm::createStringError("no function '" + name +
                                     "' in the LLVM module");
    addPackedWrapper(*module, *f);
  }
  prepare(*module);
  // An entry inlined into its wrapper is not called by anything else.
  for (const std::string &name : entries)
    if (llvm::Function *f = module->getFunction(name); f && f->use_empty())
      f->eraseFromParent();

  // The object dump is one file: one part.
  std::vector<Bytes> objects;
  if (!options.objectPath.empty()) {
    llvm::Expected<Bytes> object = compileToObject(
        *module, machine, options.optLevel, options.llvmLoopTransforms);
    if (!object)
      return object.takeError();
    objects.push_back(std::move(*object));
  } else {
    unsigned threads = std::max(1u, options.threads);
    if (threads > 1)
      outlineBigLoops(*module, options.outlineLoopSize);
    llvm::Expected<std::vector<Bytes>> compiled =
        compileParts(split(*module, threads), machine, options, threads);
    if (!compiled)
      return compiled.takeError();
    objects = std::move(*compiled);
  }
  module.reset();
  context.reset();

  if (!options.objectPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(options.objectPath, ec);
    if (ec)
      return llvm::createStringError("cannot write " + options.objectPath +
                                     ": " + ec.message());
    os.write(objects[0].data(), objects[0].size());
  }
  return objects;
}

llvm::Expected<std::unique_ptr<CpuCode>>
CpuCode::load(llvm::ArrayRef<Bytes> objects,
              llvm::orc::JITTargetMachineBuilder machine,
              llvm::ArrayRef<std::string> sharedLibs) {
  for (const std::string &lib : sharedLibs) {
    std::string error;
    if (llvm::sys::DynamicLibrary::LoadLibraryPermanently(lib.c_str(), &error))
      return llvm::createStringError("cannot load " + lib + ": " + error);
  }
  // RuntimeDyld, like mlir::ExecutionEngine; with JITDUMPDIR set, perf's
  // JIT listener writes the code's symbols there (`perf inject --jit`).
  llvm::JITEventListener *perf =
      std::getenv("JITDUMPDIR")
          ? llvm::JITEventListener::createPerfJITEventListener()
          : nullptr;
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(machine)
          .setObjectLinkingLayerCreator(
              [perf](llvm::orc::ExecutionSession &es)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                auto layer =
                    std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                        es, [](const llvm::MemoryBuffer &) {
                          return std::make_unique<llvm::SectionMemoryManager>();
                        });
                if (perf)
                  layer->registerJITEventListener(*perf);
                return layer;
              })
          .create();
  if (!jit)
    return jit.takeError();
  // libc, libm and the libraries above (loaded with RTLD_GLOBAL).
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  // The compiled code's heap (abi/Alloc.h): ours, so a failure is reported.
  llvm::orc::SymbolMap heap;
  auto define = [&](const char *name, void *address) {
    heap[(*jit)->mangleAndIntern(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(address),
        llvm::JITSymbolFlags::Exported};
  };
  define("_mlir_memref_to_llvm_alloc",
         reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc));
  define("_mlir_memref_to_llvm_aligned_alloc",
         reinterpret_cast<void *>(&_mlir_memref_to_llvm_aligned_alloc));
  define("_mlir_memref_to_llvm_free",
         reinterpret_cast<void *>(&_mlir_memref_to_llvm_free));
  if (llvm::Error err = (*jit)->getMainJITDylib().define(
          llvm::orc::absoluteSymbols(std::move(heap))))
    return std::move(err);
  for (size_t i = 0; i < objects.size(); ++i) {
    llvm::StringRef bytes(objects[i].data(), objects[i].size());
    if (llvm::Error err =
            (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
                bytes, "tlm-part-" + std::to_string(i))))
      return std::move(err);
  }
  std::unique_ptr<CpuCode> code(new CpuCode());
  code->jit_ = std::move(*jit);
  return code;
}

llvm::Expected<void (*)(void **)> CpuCode::lookupPacked(llvm::StringRef entry) {
  llvm::Expected<llvm::orc::ExecutorAddr> addr =
      jit_->lookup(("_mlir_" + entry).str());
  if (!addr)
    return addr.takeError();
  return addr->toPtr<void (*)(void **)>();
}

llvm::Expected<std::string>
CpuCode::assembly(llvm::Module &m, llvm::orc::JITTargetMachineBuilder machine,
                  unsigned optLevel) {
  disableLoopStrengthReduction();
  auto tm = machine.createTargetMachine();
  if (!tm)
    return tm.takeError();
  optimize(m, **tm, optLevel, /*loopTransforms=*/false);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr,
                                 llvm::CodeGenFileType::AssemblyFile))
    return llvm::createStringError("the host target cannot emit assembly");
  pm.run(m);
  return text.str().str();
}

} // namespace tlm::runtime
