//===- LlvmError.h - tlm::Error across the compiler boundary ----*- C++ -*-===//
//
// The compiler (MLIR, LLVM) speaks llvm::Error; the runtime and the tools speak
// tlm::Error (Error.h). These convert between the two, keeping whether the
// target was unavailable (exit 3) on the way. The tools convert once, where
// they call the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_LLVMERROR_H
#define TLM_SUPPORT_LLVMERROR_H

#include "lib/support/Error.h"

#include "llvm/Support/Error.h"

namespace tlm {

/// A reason a target cannot be used here (no driver, no device, no
/// libdevice, a driver call that failed), as opposed to a compiler bug.
class UnavailableError : public llvm::ErrorInfo<UnavailableError> {
public:
  static char ID;
  explicit UnavailableError(std::string message)
      : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  std::string message;
};

inline llvm::Error unavailable(std::string message) {
  return llvm::make_error<UnavailableError>(std::move(message));
}

inline llvm::Error toLlvm(Error err) {
  if (!err)
    return llvm::Error::success();
  if (err.kind() == ErrorKind::Unavailable)
    return unavailable(err.message());
  return llvm::createStringError(err.message());
}

template <typename T> llvm::Expected<T> toLlvm(Expected<T> value) {
  if (!value)
    return toLlvm(value.takeError());
  return std::move(*value);
}

inline Error fromLlvm(llvm::Error err) {
  if (!err)
    return Error::success();
  ErrorKind kind =
      err.isA<UnavailableError>() ? ErrorKind::Unavailable : ErrorKind::Failure;
  return Error(llvm::toString(std::move(err)), kind);
}

template <typename T> Expected<T> fromLlvm(llvm::Expected<T> value) {
  if (!value)
    return fromLlvm(value.takeError());
  return std::move(*value);
}

} // namespace tlm

#endif // TLM_SUPPORT_LLVMERROR_H
