//===- Progress.h - long phases reported on stderr ---------------*- C++ -*-===//
//
// A model command spends seconds before its first output: compiling,
// reading the weights, the prefill, an eval over many windows. A Phase
// reports one of them on stderr only when it is long: a line once it has
// run for TLM_PROGRESS_AFTER_MS (default 1000; the tests set it), so a long
// wait is never silent, and a line when it ends, with its time and rate.
// Quick phases print nothing; --quiet prints nothing; with --json the end
// line is JSON ({"phase": ..., "ms": ..., ...}). A threshold of 0 announces
// every phase as it starts, without the watcher's race (the tests' mode).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TOOLS_COMMON_PROGRESS_H
#define TLM_TOOLS_COMMON_PROGRESS_H

#include "lib/support/Json.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace tlm::cli {

class Phase {
public:
  /// `name` is the JSON phase name ("compile"); `starting` the line shown
  /// once the phase has run long ("compiling the model").
  Phase(bool enabled, bool json, std::string name, std::string starting);
  /// Ends the phase without a report (an error path).
  ~Phase();
  Phase(const Phase &) = delete;
  Phase &operator=(const Phase &) = delete;

  /// Ends the phase; when it was long, prints "<summary> in <time>" (or the
  /// JSON line: the phase, its ms and the members of `jsonFields`).
  void done(const std::string &summary,
            const json::Value &jsonFields = json::Value::object());
  /// Seconds since the phase started.
  double seconds() const;

private:
  void stop();
  bool enabled_, json_;
  std::string name_, starting_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds after_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool finished_ = false, announced_ = false;
  std::thread watcher_;
};

/// The threshold of TLM_PROGRESS_AFTER_MS (default 1000 ms).
std::chrono::milliseconds progressAfter();

/// `x` rounded to `decimals` places, for JSON figures as short as the text
/// lines print them.
double rounded(double x, int decimals);

/// A JSON object of `members`, in order.
/// `bytes` for a person: "812 B", "3.4 KB", "12.5 MB", "1.27 GB"
/// (decimal units, as file sizes are given).
std::string sizeText(double bytes);

/// `ms` for a person: "0.42 ms", "87.3 ms", "2.41 s".
std::string durationText(double ms);

/// A JSON array of `elements`.
json::Value jsonArray(std::initializer_list<json::Value> elements);

json::Value jsonObject(
    std::initializer_list<std::pair<const char *, json::Value>> members);

/// printf into a std::string, for the phases' lines.
std::string formatString(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

} // namespace tlm::cli

#endif // TLM_TOOLS_COMMON_PROGRESS_H
