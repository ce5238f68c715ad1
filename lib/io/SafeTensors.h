//===- SafeTensors.h - read and write safetensors files ---------*- C++ -*-===//
//
// A reader that validates the whole header (size cap, JSON, dtypes, shapes,
// byte counts, offsets inside the file, no overlaps) before touching tensor
// data, then reads each tensor once into one block of memory, each at a
// 64-byte boundary: the one copy the JIT binds. And a writer for `--output`.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_SAFETENSORS_H
#define TLM_IO_SAFETENSORS_H

#include "lib/io/LargeBuffer.h"

#include "lib/io/FileIO.h"
#include "lib/support/Error.h"
#include "lib/support/Strings.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tlm::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// Bytes per element, and the safetensors spelling ("F32", ...).
size_t dtypeSize(DType dtype);
std::string_view dtypeName(DType dtype);

/// Element `i` of `data`, an F32, BF16 or F16 tensor, as f32 (exact).
float elementAsF32(const void *data, DType dtype, size_t i);

/// "(4, 12, 64)".
std::string shapeString(const std::vector<int64_t> &shape);

/// One tensor of a file, its data owned by the file object.
struct Tensor {
  DType dtype;
  std::vector<int64_t> shape;
  void *data = nullptr;
  size_t bytes = 0;
  /// Where the data starts in the file.
  uint64_t fileOffset = 0;

  int64_t numElements() const;
  const float *f32() const { return static_cast<const float *>(data); }
};

class SafeTensors {
public:
  /// How tensor data reaches memory. Read (the default) copies each tensor
  /// once into anonymous memory (a LargeBuffer, on huge pages when
  /// `hugePages`); Map points into a private read-only mapping of the file
  /// (kept for measurements: streaming weights from the page cache was
  /// measured slower, see the README); Header reads none of it (`data`
  /// stays null), for a reader of its own (a token stream's windows).
  enum class Load { Read, Map, Header };

  /// Opens and validates `path`; errors name the file and the tensor.
  static Expected<SafeTensors>
  open(const std::string &path, Load load = Load::Read, bool hugePages = true);

  /// The tensor called `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
  const std::map<std::string, Tensor, std::less<>> &tensors() const {
    return tensors_;
  }
  /// Total bytes of tensor data held.
  size_t dataBytes() const;

private:
  /// The tensors with their names, in file order (by fileOffset).
  std::vector<std::pair<const std::string *, Tensor *>> inFileOrder();
  /// Load::Map: each tensor's data in place in a mapping of the file.
  Error mapData(int fd, const std::string &path, uint64_t fileSize);
  /// Load::Read: each tensor's data read into one block, 64-byte aligned.
  Error readData(int fd, const std::string &path, bool hugePages);

  std::map<std::string, Tensor, std::less<>> tensors_;
  /// Every tensor's data in Load::Read mode.
  LargeBuffer data_;
  /// The file mapping in Load::Map mode.
  std::shared_ptr<void> mapping_;
};

/// A tensor to write: a view of caller memory.
struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` to `path` in safetensors format (header padded to 8),
/// with `metadata` as the header's `__metadata__` (string values) when not
/// empty.
Error writeSafeTensors(
    const std::string &path, const std::vector<TensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata = {});
/// The same into `file`, which the caller commits (with the files written
/// beside it, once all are whole).
Error writeSafeTensors(
    AtomicFile &file, const std::vector<TensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata = {});

} // namespace tlm::io

#endif // TLM_IO_SAFETENSORS_H
