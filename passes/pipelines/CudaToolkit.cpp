//===- CudaToolkit.cpp - where the GPU pipeline finds CUDA ----------------===//

#include "passes/pipelines/Pipelines.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;

std::string tlm::findCudaToolkit() {
  for (const char *var : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir)
      return dir;
  if (llvm::sys::fs::is_directory("/usr/local/cuda"))
    return "/usr/local/cuda";
  return "";
}

std::string tlm::findLibdevice() {
  std::string toolkit = findCudaToolkit();
  std::string path = toolkit + "/nvvm/libdevice/libdevice.10.bc";
  return !toolkit.empty() && llvm::sys::fs::exists(path) ? path : "";
}
