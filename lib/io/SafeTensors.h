//===- SafeTensors.h - read and write safetensors files ---------*- C++ -*-===//
//
// A reader that validates the whole header (size cap, JSON, dtypes, shapes,
// byte counts, offsets inside the file, no overlaps) before touching tensor
// data, then reads each tensor once into its own 64-byte-aligned buffer: the
// one copy the JIT binds. And a writer for `--output`.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_SAFETENSORS_H
#define TLM_IO_SAFETENSORS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tlm::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// Bytes per element, and the safetensors spelling ("F32", ...).
size_t dtypeSize(DType dtype);
llvm::StringRef dtypeName(DType dtype);

/// "(4, 12, 64)".
std::string shapeString(const std::vector<int64_t> &shape);

/// One tensor of a file, its data owned by the file object.
struct Tensor {
  DType dtype;
  std::vector<int64_t> shape;
  void *data = nullptr;
  size_t bytes = 0;

  int64_t numElements() const;
  const float *f32() const { return static_cast<const float *>(data); }
};

class SafeTensors {
public:
  /// Opens and validates `path`; errors name the file and the tensor.
  static llvm::Expected<SafeTensors> open(const std::string &path);

  /// The tensor called `name`, or nullptr.
  const Tensor *find(llvm::StringRef name) const;
  const std::map<std::string, Tensor, std::less<>> &tensors() const {
    return tensors_;
  }
  /// Total bytes of tensor data held.
  size_t dataBytes() const;

private:
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  std::map<std::string, Tensor, std::less<>> tensors_;
  std::vector<std::unique_ptr<void, FreeDeleter>> buffers_;
};

/// A tensor to write: a view of caller memory.
struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` to `path` in safetensors format (header padded to 8).
llvm::Error writeSafeTensors(const std::string &path,
                             const std::vector<TensorView> &tensors);

} // namespace tlm::io

#endif // TLM_IO_SAFETENSORS_H
