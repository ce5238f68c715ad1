//===- FileIO.h - files that are read whole or written whole ---*- C++ -*-===//
//
// Every file tlm reads or writes goes through here, so the guarantees hold
// for all of them (docs/errors.md#files):
// - an input is a regular file, checked on a descriptor opened without
//   blocking, so a FIFO, a device, a folder or a symlink loop is an error at
//   once instead of a hang or an unbounded read;
// - an output is written to a temporary file beside it and renamed over it
//   once complete: an error, a full disk or a signal leaves the old file as
//   it was and no partial one. An output that is a device, a FIFO or a
//   link into /proc (`/dev/null`, `/dev/stdout`) is written straight into
//   (appending), since renaming over it would replace the device node or
//   the link with a file; a link to a regular file has its target replaced
//   and stays a link;
// - an output that is also an input is refused before anything is written.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_FILEIO_H
#define TLM_IO_FILEIO_H

#include "lib/support/Error.h"
#include "lib/support/Strings.h"

#include <string>
#include <vector>

namespace tlm::io {

/// Opens `path` for reading (a descriptor the caller closes) if it names a
/// regular file; otherwise an error saying what it is instead.
Expected<int> openRegularFile(const std::string &path);

/// The whole of the regular file `path`, at most `maxBytes` of it (a larger
/// one is an error naming the limit).
Expected<std::string> readRegularFile(const std::string &path,
                                      uint64_t maxBytes);

/// What is left to read of `fd`, at most `maxBytes` (else an error naming
/// `name`, as every bounded read here says it).
Expected<std::string> readToEnd(int fd, const std::string &name,
                                uint64_t maxBytes);

/// readRegularFile, or with `path` "-" standard input (a pipe, a terminal,
/// a redirected file): read to its end, at most `maxBytes`.
Expected<std::string> readInput(const std::string &path, uint64_t maxBytes);

/// An output file that appears only when committed.
class AtomicFile {
public:
  /// Starts writing `path` (its folder must exist). A `path` that is a
  /// character device, a FIFO or a link into /proc is written directly; a
  /// folder, a socket or a block device is an error.
  static Expected<AtomicFile> create(const std::string &path);
  AtomicFile(AtomicFile &&other);
  AtomicFile &operator=(AtomicFile &&) = delete;
  /// Removes the temporary file unless committed.
  ~AtomicFile();

  Error write(const void *data, size_t bytes);
  Error write(std::string_view text) { return write(text.data(), text.size()); }
  /// Flushes the data to disk and renames the file into place.
  Error commit();

private:
  AtomicFile(std::string path, std::string temp, int fd, char *registered)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd),
        registered_(registered) {}
  std::string path_, temp_;
  int fd_ = -1;
  /// The signal handler's copy of temp_ (FileIO.cpp), or null.
  char *registered_ = nullptr;
};

/// While alive, SIGINT, SIGTERM, SIGHUP or SIGQUIT remove `path` before the
/// signal takes its course: for a temporary file written by someone else
/// (the linker's output) that is renamed into place when whole.
class RemoveOnSignal {
public:
  explicit RemoveOnSignal(const std::string &path);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal &) = delete;
  RemoveOnSignal &operator=(const RemoveOnSignal &) = delete;

private:
  char *registered_;
};

/// An error unless `path` can become a regular file by a rename beside it:
/// its folder exists and it is absent or (through any links) a regular
/// file. For outputs that are files by nature (an artifact, loaded back
/// with dlopen), where AtomicFile would write a device or FIFO in place.
Error checkFileOutput(const std::string &path);

/// Flushes the regular file `path` to disk (before it is renamed into
/// place, so a crash leaves the old file or the whole new one).
Error syncFile(const std::string &path);

/// An error when `output` names the same file as one of `inputs` (missing
/// files and empty names are fine); `what` names the output's flag.
Error refuseOverwritingInput(const std::string &output,
                             const std::vector<std::string> &inputs,
                             std::string_view what);

} // namespace tlm::io

#endif // TLM_IO_FILEIO_H
