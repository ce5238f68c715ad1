//===- Strings.h - string_view helpers and a span, without LLVM -*- C++ -*-===//
//
// What the runtime needed from llvm::StringRef and llvm::ArrayRef, for
// C++17 (whose std::string_view has no starts_with and which has no
// std::span).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_STRINGS_H
#define TLM_SUPPORT_STRINGS_H

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

namespace tlm {

inline bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

inline bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

/// Drops `prefix` from the front of `s` when it is there.
inline bool consumeFront(std::string_view &s, std::string_view prefix) {
  if (!startsWith(s, prefix))
    return false;
  s.remove_prefix(prefix.size());
  return true;
}

/// `s` up to the first `separator` and the rest after it (all of `s` and
/// an empty rest when there is none), as llvm::StringRef::split.
inline std::pair<std::string_view, std::string_view> split(std::string_view s,
                                                           char separator) {
  size_t at = s.find(separator);
  if (at == std::string_view::npos)
    return {s, {}};
  return {s.substr(0, at), s.substr(at + 1)};
}

/// A read-only view of contiguous elements (std::span's read side).
template <typename T> class Span {
public:
  Span() = default;
  Span(const T *data, size_t size) : data_(data), size_(size) {}
  Span(const std::vector<T> &v) : data_(v.data()), size_(v.size()) {}
  template <size_t N>
  Span(const std::array<T, N> &a) : data_(a.data()), size_(N) {}
  template <size_t N> Span(const T (&a)[N]) : data_(a), size_(N) {}

  const T *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }
  const T &operator[](size_t i) const { return data_[i]; }
  const T &back() const { return data_[size_ - 1]; }
  Span dropFront(size_t n) const {
    return n >= size_ ? Span() : Span(data_ + n, size_ - n);
  }

private:
  const T *data_ = nullptr;
  size_t size_ = 0;
};

template <typename T> Span(const T *, size_t) -> Span<T>;

} // namespace tlm

#endif // TLM_SUPPORT_STRINGS_H
