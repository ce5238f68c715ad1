//===- MapGuard.h - a file that shrinks under its mapping -------*- C++ -*-===//
//
// With --weights-load mmap the weights are the file's pages. If the file is
// truncated while mapped, the next read of a page past its new end raises
// SIGBUS, which would kill the process with no word of why. A guarded
// mapping turns that SIGBUS into one `error:` line naming the file and exit
// 1. What is guaranteed (docs/memory.md#mapped-weights): a file that shrinks
// is reported; a file rewritten in place without shrinking changes the
// weights under the run, which no check sees (tlm's own writers replace
// files by rename, which leaves a mapping of the old file intact).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_MAPGUARD_H
#define TLM_IO_MAPGUARD_H

#include <cstddef>
#include <string>

namespace tlm::io {

/// Reports a SIGBUS inside [base, base + size) as the file `path` having
/// shrunk. At most 16 mappings at once; more are left unguarded.
void guardMapping(const void *base, size_t size, const std::string &path);
/// Stops guarding the mapping at `base` (before it is unmapped).
void unguardMapping(const void *base);

} // namespace tlm::io

#endif // TLM_IO_MAPGUARD_H
