//===- ArtifactLink.cpp - link compiled code into an artifact -------------===//

#include "lib/compiler/ArtifactLink.h"
#include "lib/io/FileIO.h"
#include "lib/support/Checksum.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <tuple>

namespace tlm::runtime {

namespace {

/// The linker's version script: what an artifact exports.
constexpr const char *kExports = "{ global: _mlir_*; tlm_*; local: *; };\n";

llvm::Error artifactError(const std::string &path, const llvm::Twine &why) {
  return llvm::createStringError("artifact: " + path + ": " + why);
}

/// `manifest` as an object file defining `tlm_artifact_manifest`.
llvm::Expected<Bytes>
manifestObject(const std::string &manifest,
               llvm::orc::JITTargetMachineBuilder machine) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("manifest", *context);
  auto tm = machine.createTargetMachine();
  if (!tm)
    return tm.takeError();
  module->setDataLayout((*tm)->createDataLayout());
  module->setTargetTriple((*tm)->getTargetTriple());
  llvm::Constant *text =
      llvm::ConstantDataArray::getString(*context, manifest, /*AddNull=*/true);
  new llvm::GlobalVariable(*module, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           kArtifactManifestSymbol);
  CpuCodegenOptions options;
  options.optLevel = 0;
  llvm::Expected<std::vector<Bytes>> objects = CpuCode::compileObjects(
      std::move(module), std::move(context), machine, /*entries=*/{},
      [](llvm::Module &) {}, options);
  if (!objects)
    return objects.takeError();
  if (objects->size() != 1)
    return llvm::createStringError("the manifest compiled to " +
                                   std::to_string(objects->size()) +
                                   " objects");
  return std::move((*objects)[0]);
}

llvm::Error writeBytes(const std::string &path, const Bytes &bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError("cannot write " + path + ": " +
                                   ec.message());
  os.write(bytes.data(), bytes.size());
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error();
    return llvm::createStringError("cannot write " + path + ": " + why);
  }
  return llvm::Error::success();
}

/// The functions of the appending list `name` (llvm.global_ctors or
/// llvm.global_dtors) in the order they would run, the list removed.
std::vector<llvm::Function *>
takeStructors(llvm::Module &module, llvm::StringRef name, bool reverse) {
  llvm::GlobalVariable *list = module.getGlobalVariable(name);
  if (!list)
    return {};
  // (priority, position, function): equal priorities keep their order.
  std::vector<std::tuple<uint64_t, size_t, llvm::Function *>> entries;
  if (auto *array = llvm::dyn_cast<llvm::ConstantArray>(list->getInitializer()))
    for (llvm::Use &element : array->operands()) {
      auto *entry = llvm::cast<llvm::ConstantStruct>(element);
      uint64_t priority =
          llvm::cast<llvm::ConstantInt>(entry->getOperand(0))->getZExtValue();
      auto *fn = llvm::cast<llvm::Function>(entry->getOperand(1));
      entries.emplace_back(priority, entries.size(), fn);
    }
  list->eraseFromParent();
  // Lower priorities construct first and destruct last.
  std::sort(entries.begin(), entries.end());
  if (reverse)
    std::reverse(entries.begin(), entries.end());
  std::vector<llvm::Function *> fns;
  for (auto &entry : entries)
    fns.push_back(std::get<2>(entry));
  return fns;
}

/// A `void()` function `name` calling `fns` in order.
void defineCaller(llvm::Module &module, llvm::StringRef name,
                  llvm::ArrayRef<llvm::Function *> fns) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
      llvm::GlobalValue::ExternalLinkage, name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  for (llvm::Function *callee : fns)
    b.CreateCall(callee);
  b.CreateRetVoid();
}

} // namespace

std::vector<std::string> detachCudaRuntime(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::PointerType *ptr = llvm::PointerType::get(ctx, 0);
  std::vector<std::string> imports;
  for (llvm::Function &fn : module) {
    if (!fn.isDeclaration() || !fn.getName().starts_with("mgpu"))
      continue;
    auto *slot = new llvm::GlobalVariable(
        module, ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
        llvm::ConstantPointerNull::get(ptr), kCudaImportPrefix + fn.getName());
    fn.setLinkage(llvm::GlobalValue::InternalLinkage);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", &fn));
    llvm::SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : fn.args())
      args.push_back(&arg);
    llvm::CallInst *call =
        b.CreateCall(fn.getFunctionType(), b.CreateLoad(ptr, slot), args);
    call->setTailCall();
    if (fn.getReturnType()->isVoidTy())
      b.CreateRetVoid();
    else
      b.CreateRet(call);
    imports.push_back(fn.getName().str());
  }
  defineCaller(module, kCudaLoadSymbol,
               takeStructors(module, "llvm.global_ctors", /*reverse=*/false));
  defineCaller(module, kCudaUnloadSymbol,
               takeStructors(module, "llvm.global_dtors", /*reverse=*/true));
  return imports;
}

/// Appends the trailer of lib/support/Checksum.h to the linked library
/// `path`: the magic and the checksum of every byte before it.
llvm::Error appendChecksum(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return artifactError(path, "cannot read it back: " +
                                   buffer.getError().message());
  Checksum sum;
  sum.add((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  sum.add(kArtifactTrailerMagic, sizeof(kArtifactTrailerMagic));
  char trailer[kArtifactTrailerSize];
  std::memcpy(trailer, kArtifactTrailerMagic, sizeof(kArtifactTrailerMagic));
  uint64_t value = sum.value();
  for (int i = 0; i < 8; ++i)
    trailer[8 + i] = char(value >> (8 * i));
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_Append);
  if (!ec) {
    out.write(trailer, sizeof(trailer));
    out.close();
    ec = out.error();
  }
  if (ec)
    return artifactError(path, "cannot write: " + ec.message());
  return llvm::Error::success();
}

llvm::Error linkArtifact(llvm::ArrayRef<Bytes> objects,
                         const ArtifactManifest &manifest,
                         const llvm::orc::JITTargetMachineBuilder &machine,
                         llvm::ArrayRef<std::string> libraries,
                         const std::string &path) {
  llvm::Expected<Bytes> manifestObj =
      manifestObject(manifestToJson(manifest), machine);
  if (!manifestObj)
    return manifestObj.takeError();
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tlm-artifact", dir))
    return artifactError(path,
                         "cannot create a temporary folder: " + ec.message());
  std::vector<std::string> files;
  auto cleanup = [&] {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
    llvm::sys::fs::remove(dir);
  };
  // Only the entries and tlm's own symbols are exported: the parts' other
  // functions were made external only to link with one another.
  files.push_back((dir + "/exports.map").str());
  if (llvm::Error err =
          writeBytes(files.back(), Bytes(llvm::StringRef(kExports).begin(),
                                         llvm::StringRef(kExports).end()))) {
    cleanup();
    return err;
  }
  for (size_t i = 0; i <= objects.size(); ++i) {
    files.push_back((dir + "/part-" + llvm::Twine(i) + ".o").str());
    if (llvm::Error err = writeBytes(
            files.back(), i < objects.size() ? objects[i] : *manifestObj)) {
      cleanup();
      return err;
    }
  }
  // Linked beside the destination and renamed over it: the artifact is
  // whole or absent.
  llvm::SmallString<256> temp;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", temp)) {
    cleanup();
    return artifactError(path, "cannot write: " + ec.message());
  }
  // An interrupted compile leaves no half-linked temporary behind.
  io::RemoveOnSignal removeTemp(temp.str().str());
  // -Bsymbolic: the code refers to its own functions directly (they are
  // dso_local in the module), never through a preemptible symbol.
  std::vector<std::string> args = {TLM_LLD,      "-shared",
                                   "-Bsymbolic", "--hash-style=gnu",
                                   "-o",         temp.str().str()};
  args.push_back("--version-script=" + files[0]);
  for (size_t i = 1; i < files.size(); ++i)
    args.push_back(files[i]);
  // Archives are linked in (the members the code calls); shared libraries
  // become dependencies only when the code calls them.
  args.push_back("--as-needed");
  for (const std::string &lib : libraries) {
    args.push_back(lib);
    if (llvm::StringRef(lib).ends_with(".a"))
      continue;
    args.push_back("-rpath");
    args.push_back(llvm::sys::path::parent_path(lib).str());
  }
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string errorText;
  llvm::SmallString<128> log(dir);
  llvm::sys::path::append(log, "lld.log");
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(),
                                                log.str()};
  int rc = llvm::sys::ExecuteAndWait(TLM_LLD, argRefs, std::nullopt, redirects,
                                     0, 0, &errorText);
  std::string lldOutput;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    lldOutput = (*buffer)->getBuffer().trim().str();
  llvm::sys::fs::remove(log);
  cleanup();
  if (rc != 0) {
    llvm::sys::fs::remove(temp);
    return artifactError(path, "linking with " TLM_LLD " failed: " +
                                   (lldOutput.empty() ? errorText : lldOutput));
  }
  // The checksum the runtime checks before dlopen maps the file.
  if (llvm::Error err = appendChecksum(temp.str().str())) {
    llvm::sys::fs::remove(temp);
    return err;
  }
  // On disk before the name points at it, as AtomicFile does.
  if (Error err = io::syncFile(temp.str().str())) {
    llvm::sys::fs::remove(temp);
    return artifactError(path, err.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return artifactError(path, "cannot write: " + ec.message());
  }
  return llvm::Error::success();
}

} // namespace tlm::runtime
