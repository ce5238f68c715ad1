//===- Progress.cpp - long phases reported on stderr ----------------------===//

#include "tools/common/Progress.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace tlm::cli {

std::chrono::milliseconds progressAfter() {
  const char *env = std::getenv("TLM_PROGRESS_AFTER_MS");
  char *end = nullptr;
  long long ms = env ? std::strtoll(env, &end, 10) : 1000;
  if (env && (end == env || *end != '\0' || ms < 0))
    ms = 1000; // a malformed setting keeps the default
  return std::chrono::milliseconds(ms);
}

std::string formatString(const char *format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return buffer;
}

Phase::Phase(bool enabled, bool json, std::string name, std::string starting)
    : enabled_(enabled), json_(json), name_(std::move(name)),
      starting_(std::move(starting)), start_(std::chrono::steady_clock::now()),
      after_(progressAfter()) {
  if (!enabled_)
    return;
  if (after_.count() == 0) { // every phase is long: announce it now
    announced_ = true;
    if (!json_)
      std::fprintf(stderr, "%s...\n", starting_.c_str());
    return;
  }
  // The announcement comes from a second thread because the phase itself
  // (LLVM, a read, a prefill) does not return until it is over.
  watcher_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, after_, [this] { return finished_; }))
      return;
    announced_ = true;
    if (!json_)
      std::fprintf(stderr, "%s...\n", starting_.c_str());
  });
}

Phase::~Phase() { stop(); }

void Phase::stop() {
  if (!watcher_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  wake_.notify_one();
  watcher_.join();
}

double Phase::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

double rounded(double x, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::isfinite(x) ? std::round(x * scale) / scale : x;
}

std::string sizeText(double bytes) {
  if (bytes < 1e3)
    return formatString("%.0f B", bytes);
  if (bytes < 1e6)
    return formatString("%.1f KB", bytes / 1e3);
  if (bytes < 1e9)
    return formatString("%.1f MB", bytes / 1e6);
  return formatString("%.2f GB", bytes / 1e9);
}

std::string durationText(double ms) {
  if (ms < 10)
    return formatString("%.2f ms", ms);
  if (ms < 1000)
    return formatString("%.1f ms", ms);
  return formatString("%.2f s", ms / 1000);
}

json::Value jsonArray(std::initializer_list<json::Value> elements) {
  json::Value array = json::Value::array();
  for (const json::Value &element : elements)
    array.push(element);
  return array;
}

json::Value jsonObject(
    std::initializer_list<std::pair<const char *, json::Value>> members) {
  json::Value object = json::Value::object();
  for (const auto &[key, value] : members)
    object.set(key, value);
  return object;
}

void Phase::done(const std::string &summary, const json::Value &jsonFields) {
  double s = seconds();
  stop();
  if (!enabled_ || (!announced_ && s * 1000 < after_.count()))
    return;
  if (json_) {
    json::Value line =
        jsonObject({{"phase", name_}, {"ms", rounded(s * 1000, 1)}});
    for (size_t i = 0; i < jsonFields.size(); ++i)
      line.set(jsonFields.keys()[i], jsonFields.elements()[i]);
    std::fprintf(stderr, "%s\n",
                 line.dump(json::Value::Layout::Line).c_str());
  } else
    std::fprintf(stderr, "%s in %.2f s\n", summary.c_str(), s);
  enabled_ = false;
}

} // namespace tlm::cli
