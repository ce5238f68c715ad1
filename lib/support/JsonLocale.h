//===- JsonLocale.h - the C locale for JSON numbers -------------*- C++ -*-===//
//
// Json.cpp and JsonParse.cpp's one shared piece.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_JSONLOCALE_H
#define TLM_SUPPORT_JSONLOCALE_H

#include <clocale>
#include <locale.h>

namespace tlm::json {

/// Numbers read and print in the C locale whatever the process's: an
/// application embedding the C API may have set LC_NUMERIC (de_DE's decimal
/// comma would make "0.5" read as 0 and 1.5e-05 print as "1,5e-05"). On
/// this thread only, for the duration of the scope.
class CLocale {
public:
  CLocale() : previous_(locale_ ? ::uselocale(locale_) : nullptr) {}
  ~CLocale() {
    if (previous_)
      ::uselocale(previous_);
  }

private:
  static inline locale_t locale_ = ::newlocale(LC_ALL_MASK, "C", nullptr);
  locale_t previous_;
};

} // namespace tlm::json

#endif // TLM_SUPPORT_JSONLOCALE_H
