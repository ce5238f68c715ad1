//===- Error.h - errors of the runtime, without LLVM -----------*- C++ -*-===//
//
// The runtime (lib/io, lib/model's data side, lib/runtime's loaders, the C
// API) builds with nothing but the C++ standard library, so it reports
// failures with these rather than llvm::Error. They follow llvm::Error's
// shape (`if (Error e = f()) return e;`, `if (!x) return x.takeError();`),
// so code reads the same on both sides of the line, but an unread error is
// not fatal. The compiler converts at the boundary (LlvmError.h).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_ERROR_H
#define TLM_SUPPORT_ERROR_H

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace tlm {

/// What kind of failure, for the exit code and the C API's status (which
/// come from here, never from the words of the message): the target (a
/// GPU, its driver) is not there; an artifact, weights or host that do not
/// fit one another; memory that could not be had; or anything else (the
/// message says what).
enum class ErrorKind { Failure, Unavailable, Mismatch, OutOfMemory };

/// Success, or a message saying what failed.
class [[nodiscard]] Error {
public:
  static Error success() { return Error(); }
  explicit Error(std::string message, ErrorKind kind = ErrorKind::Failure)
      : failure_(
            std::make_unique<Failure>(Failure{std::move(message), kind, 0})) {}
  /// A failure a tool ends with `exitCode` (docs/spec/config.md#command-line:
  /// 1 user error, 2 internal failure, 3 target unavailable, 128 + a
  /// signal).
  static Error withExitCode(int exitCode, std::string message) {
    Error err(std::move(message));
    err.failure_->exitCode = exitCode;
    return err;
  }
  Error(Error &&) noexcept = default;
  Error &operator=(Error &&) noexcept = default;

  /// True on failure, as llvm::Error.
  explicit operator bool() const { return failure_ != nullptr; }
  const std::string &message() const {
    assert(failure_ && "the message of a success");
    return failure_->message;
  }
  ErrorKind kind() const {
    return failure_ ? failure_->kind : ErrorKind::Failure;
  }
  /// The same failure, its message prefixed with `context` (which keeps
  /// the kind and exit code that wrapping in a new Error would lose).
  Error prefixed(const std::string &context) && {
    if (failure_)
      failure_->message = context + failure_->message;
    return std::move(*this);
  }
  /// The exit code a tool reports this failure with: the one given, else 3
  /// for an unavailable target and 1 for anything else; 0 for success.
  int exitCode() const {
    if (!failure_)
      return 0;
    if (failure_->exitCode)
      return failure_->exitCode;
    return failure_->kind == ErrorKind::Unavailable ? 3 : 1;
  }

private:
  Error() = default;
  struct Failure {
    std::string message;
    ErrorKind kind;
    int exitCode;
  };
  std::unique_ptr<Failure> failure_;
};

inline Error makeError(std::string message) {
  return Error(std::move(message));
}

/// Weights, an artifact or a host that do not fit one another.
inline Error mismatchError(std::string message) {
  return Error(std::move(message), ErrorKind::Mismatch);
}

/// Memory that could not be had.
inline Error memoryError(std::string message) {
  return Error(std::move(message), ErrorKind::OutOfMemory);
}

/// A value, or the Error that kept it from being made.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Error error) : error_(std::move(error)) {
    assert(error_ && "an Expected made from a success");
  }
  template <typename U,
            typename = std::enable_if_t<std::is_convertible_v<U &&, T> &&
                                        !std::is_same_v<U, T>>>
  Expected(U &&value) : value_(T(std::forward<U>(value))) {}

  explicit operator bool() const { return value_.has_value(); }
  T &operator*() {
    assert(value_ && "the value of a failure");
    return *value_;
  }
  const T &operator*() const {
    assert(value_ && "the value of a failure");
    return *value_;
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
  /// The error (a success when there is a value), as llvm::Expected.
  Error takeError() { return value_ ? Error::success() : std::move(error_); }

private:
  std::optional<T> value_;
  Error error_ = Error::success();
};

} // namespace tlm

#endif // TLM_SUPPORT_ERROR_H
