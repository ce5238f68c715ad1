//===- Program.cpp - compiled entry points and how to call them -----------===//

#include "lib/runtime/Program.h"
#include "lib/runtime/cuda/CudaRuntime.h"

#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>

namespace tlm::runtime {

namespace {

/// Calls a packed entry. UBSan's -fsanitize=function reads a type
/// signature just before the callee, which generated code does not have
/// (and its first function starts a page, so the read faults): this one call
/// is left unchecked.
#if defined(__clang__)
__attribute__((no_sanitize("function"), noinline))
#endif
void invokePacked(void (*fn)(void **), void **args) {
  fn(args);
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] == Program::kDynamic ? "?" : std::to_string(shape[i]);
  }
  return s + ")";
}

} // namespace

Program::~Program() = default;

Error Program::call(std::string_view entry, Span<TensorRef> args) const {
  auto it = entries_.find(entry);
  std::string name(entry);
  if (it == entries_.end())
    return makeError("no entry point named '" + name + "'");
  const Entry &sig = it->second;
  if (!sig.packed)
    return makeError(name + ": the code is not loaded (an artifact written "
                            "for another CPU)");
  if (args.size() != sig.shapes.size())
    return makeError(name + ": expected " + std::to_string(sig.shapes.size()) +
                     " buffers (" + std::to_string(sig.numInputs) +
                     " inputs, " +
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
      ok =
          shape[d] >= 0 && (expected[d] == kDynamic || expected[d] == shape[d]);
    if (!ok)
      return makeError(name + ": buffer " + std::to_string(i) + " has shape " +
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
  if (onDevice_)
    if (Error err = cuda::takeError())
      return err.exitCode() == 1
                 ? Error::withExitCode(1, name + " on the GPU: " +
                                              err.message())
                 : cuda::unavailable(name + " on the GPU: " + err.message());
  return Error::success();
}

void prepareOpenMP() {
  // Once an OpenMP runtime is loaded (LLVM's, or Intel's, which registers
  // under the same name), the file is its registration: leave it.
  for (const char *name : {"libomp.so.5", "libomp.so", "libiomp5.so"})
    if (void *loaded = ::dlopen(name, RTLD_LAZY | RTLD_NOLOAD)) {
      ::dlclose(loaded);
      return;
    }
  if (!std::getenv("OMP_WAIT_POLICY"))
    ::setenv("KMP_BLOCKTIME", "1", /*overwrite=*/0);
  std::string name = "__KMP_REGISTERED_LIB_" + std::to_string(::getpid()) +
                     "_" + std::to_string(::getuid());
  // libomp falls back to /tmp where /dev/shm is missing.
  ::unlink(("/dev/shm/" + name).c_str());
  ::unlink(("/tmp/" + name).c_str());
}

Error setOpenMPThreads(void *symbol, int threads) {
  if (!symbol)
    return makeError("libomp did not load: cannot run on " +
                     std::to_string(threads) + " threads");
  using SetThreads = void (*)(int);
  reinterpret_cast<SetThreads>(symbol)(threads);
  return Error::success();
}

} // namespace tlm::runtime
