//===- CompileCache.h - compiled objects kept between runs -----*- C++ -*-===//
//
// The JIT's machine code depends only on the module, the pipeline and code
// generation options, the host CPU and the compiler itself, never on the
// weights: so it is stored under a key made of exactly those, and the next
// process that asks for the same key links the stored objects instead of
// compiling. An entry is one file, written to a temporary file and renamed
// into place, so concurrent writers never leave a torn entry; a checksum and
// the full key inside the file catch a corrupt or foreign one, which is then
// rebuilt. docs/jit.md#the-compile-cache.
//
// The folder may be shared, and a crash or another user can leave anything
// in it: entries are opened without following links, only regular files
// are read (a FIFO or a device never blocks or floods a read), an entry is
// written to a file of our own created there and renamed over whatever had
// its name (a planted link is replaced, never written through). The folder
// is created 0700 and entries 0600.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_COMPILECACHE_H
#define TLM_RUNTIME_COMPILECACHE_H

#include "lib/compiler/CpuCodegen.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace tlm::runtime {

/// $XDG_CACHE_HOME/tlm, else $HOME/.cache/tlm, else "" (no cache).
std::string defaultCacheDir();

/// What identifies this build of the compiler: a hash of the running
/// executable and the LLVM version it was built against.
const std::string &compilerIdentity();

class CompileCache {
public:
  explicit CompileCache(std::string dir) : dir_(std::move(dir)) {}

  /// The objects stored for `key`, or nothing when there is no entry or the
  /// entry is unreadable, truncated, corrupt or for another key; then
  /// `whyBad`, when given, says what was wrong with an entry that was there
  /// (empty when there was none).
  std::optional<std::vector<Bytes>> load(llvm::StringRef key,
                                         std::string *whyBad = nullptr) const;
  /// Stores `objects` for `key` (creating the folder).
  llvm::Error store(llvm::StringRef key, llvm::ArrayRef<Bytes> objects) const;
  /// The file an entry for `key` lives in.
  std::string pathFor(llvm::StringRef key) const;

private:
  std::optional<std::vector<Bytes>> parse(llvm::StringRef key,
                                          std::string &whyBad) const;
  std::string dir_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_COMPILECACHE_H
