//===- fuzz_safetensors.cpp - libFuzzer target for SafeTensors::open ------===//
//
// Writes the input to a temporary file (one per process, rewritten for every
// input; see InputFile in FuzzUtil.h) and opens it in both Load::Read and
// Load::Map modes. When a file opens, every byte of every tensor is read and
// summed (numElements() x dtype size bytes, as consumers index them, and at
// least Tensor::bytes), so a tensor reaching outside its buffer or the mapping
// is caught by ASan (Read) or faults (Map). With TLM_FUZZ_INVARIANTS=1 the
// header's promises are checked too: shapes non-negative, bytes == numel *
// dtype size, the same tensors in both modes, no two tensors sharing bytes.
//
//===----------------------------------------------------------------------===//

#include "lib/io/SafeTensors.h"
#include "tests/fuzz/FuzzUtil.h"

#include "lib/support/Error.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

using tlm::io::SafeTensors;

namespace {

tlm::fuzz::InputFile &input() {
  static tlm::fuzz::InputFile file("safetensors");
  return file;
}

/// numel * element size with overflow detection; false on overflow.
bool byteCount(const tlm::io::Tensor &t, uint64_t &bytes) {
  uint64_t n = tlm::io::dtypeSize(t.dtype);
  for (int64_t d : t.shape) {
    if (d < 0)
      return false;
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d))
      return false;
    n *= static_cast<uint64_t>(d);
  }
  bytes = n;
  return true;
}

/// Reads every tensor byte; returns a checksum that depends on all of them.
uint64_t touchAll(const SafeTensors &file, bool mapped) {
  uint64_t sum = 0, total = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const auto &[name, t] : file.tensors()) {
    TLM_FUZZ_CHECK(t.bytes == 0 || t.data != nullptr,
                   "a tensor with bytes has no data");
    // Consumers (tlm-run's token loader, `compare`) index numElements()
    // elements, so read that many, and at least `bytes`: if the two disagree
    // the reads leave the buffer (ASan) or the mapping (SEGV).
    unsigned __int128 view =
        static_cast<unsigned __int128>(static_cast<uint64_t>(t.numElements())) *
        tlm::io::dtypeSize(t.dtype);
    size_t n = view > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(view);
    n = std::max(n, t.bytes);
    const auto *p = static_cast<const volatile uint8_t *>(t.data);
    for (size_t i = 0; i < n; ++i)
      sum = sum * 31 + p[i];
    total += t.bytes;
    uint64_t expected = 0;
    TLM_FUZZ_CHECK(byteCount(t, expected),
                   "accepted a shape with a negative dim or an overflowing "
                   "byte count");
    TLM_FUZZ_CHECK(expected == t.bytes, "tensor bytes != numel * dtype size");
    TLM_FUZZ_CHECK(t.numElements() >= 0, "numElements() is negative");
    TLM_FUZZ_CHECK(file.find(name) == &t, "find() does not return the tensor");
    if (mapped && t.bytes > 0) {
      auto b = reinterpret_cast<uintptr_t>(t.data);
      ranges.push_back({b, b + t.bytes});
    }
  }
  TLM_FUZZ_CHECK(file.dataBytes() == total, "dataBytes() != sum of bytes");
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    TLM_FUZZ_CHECK(ranges[i].first >= ranges[i - 1].second,
                   "two tensors share bytes");
  return sum;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input().write(data, size);
  size_t readCount = 0;
  bool readOk = false;
  std::vector<std::pair<std::string, size_t>> readTensors;
  for (SafeTensors::Load load :
       {SafeTensors::Load::Read, SafeTensors::Load::Map}) {
    tlm::Expected<SafeTensors> file = SafeTensors::open(input().path(), load);
    if (!file) {
      (void)file.takeError();
      continue;
    }
    bool mapped = load == SafeTensors::Load::Map;
    uint64_t sum = touchAll(*file, mapped);
    tlm::fuzz::keep(sum);
    if (!mapped) {
      readOk = true;
      readCount = file->tensors().size();
      for (const auto &[name, t] : file->tensors())
        readTensors.push_back({name, t.bytes});
    } else if (readOk && tlm::fuzz::invariantsEnabled()) {
      // Map may additionally reject misaligned tensors, never the reverse.
      TLM_FUZZ_CHECK(readCount == file->tensors().size(),
                     "Read and Map modes see different tensors");
      size_t i = 0;
      for (const auto &[name, t] : file->tensors()) {
        TLM_FUZZ_CHECK(readTensors[i].first == name &&
                           readTensors[i].second == t.bytes,
                       "Read and Map modes see different tensors");
        ++i;
      }
    } else if (!readOk) {
      TLM_FUZZ_CHECK(false, "Map mode accepted a file that Read rejected");
    }
  }
  return 0;
}
