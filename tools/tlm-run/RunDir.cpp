//===- RunDir.cpp - a training run's folder (--out-dir) -------------------===//

#include "tools/tlm-run/RunDir.h"

#include "lib/io/FileIO.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

namespace tlm::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char *kRunFile = "run.json";
constexpr const char *kLatestFile = "latest";
constexpr const char *kMetricsFile = "metrics.jsonl";
constexpr const char *kCheckpointPrefix = "step-";

Error writeText(const std::string &path, const std::string &text) {
  auto file = io::AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (Error err = file->write(text))
    return err;
  return file->commit();
}

std::string checkpointName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%s%08lld", kCheckpointPrefix,
                (long long)step);
  return name;
}

/// The checkpoint folders in `dir`, oldest first (their names sort by step).
std::vector<std::string> checkpoints(const std::string &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(kCheckpointPrefix, 0) == 0 &&
        name.size() == std::strlen(kCheckpointPrefix) + 8 &&
        e.is_directory(ec))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

RunDir::RunDir(RunDir &&other) noexcept
    : dir_(std::move(other.dir_)), metrics_(other.metrics_) {
  other.metrics_ = nullptr;
}

RunDir::~RunDir() {
  if (metrics_)
    std::fclose(metrics_);
}

Expected<RunDir> RunDir::start(const std::string &dir,
                               const json::Value &runInfo) {
  std::error_code ec;
  if (fs::exists(dir + "/" + kRunFile, ec))
    return makeError("--out-dir " + dir +
                     " holds another run (its run.json): give --resume " +
                     dir + " to continue it, or another folder");
  if (!fs::is_directory(dir, ec) && !fs::create_directory(dir, ec))
    return makeError("--out-dir " + dir + ": " +
                     (ec ? ec.message() : "not a folder"));
  RunDir run(dir);
  if (Error err = writeText(dir + "/" + kRunFile,
                            runInfo.dump(json::Value::Layout::Indented) + "\n"))
    return err;
  // A new run starts its metrics afresh.
  if (Error err = writeText(dir + "/" + kMetricsFile, ""))
    return err;
  if (Error err = run.openMetrics())
    return err;
  return run;
}

Expected<RunDir> RunDir::resume(const std::string &dir,
                                const json::Value &config,
                                const json::Value &args) {
  std::string runFile = dir + "/" + kRunFile;
  auto text = io::readRegularFile(runFile, uint64_t(16) << 20);
  if (!text)
    return makeError("--resume " + dir + ": " + text.takeError().message());
  auto info = json::Value::parse(*text);
  if (!info)
    return makeError(runFile + ": " + info.takeError().message());
  const json::Value *saved = info->find("config");
  if (!saved || saved->dump() != config.dump())
    return makeError("--resume " + dir +
                     ": the run was started with another config (its "
                     "run.json), so its checkpoints do not fit this model");
  // The flags that shape the batches, the schedule and the update must be
  // the run's: only --steps may change.
  if (const json::Value *was = info->find("args"))
    for (size_t i = 0; i < was->keys().size(); ++i) {
      const std::string &key = was->keys()[i];
      const json::Value *now = args.find(key);
      if (key == "steps" || !now)
        continue;
      if (now->dump() != was->elements()[i].dump())
        return makeError("--resume " + dir + ": the run was started with " +
                         key + " " + was->elements()[i].dump() +
                         ", not " + now->dump() + " (its run.json)");
    }
  return RunDir(dir);
}

Expected<std::string> RunDir::latest() const {
  auto text = io::readRegularFile(dir_ + "/" + kLatestFile, 4096);
  if (!text)
    return makeError("--resume " + dir_ + ": no checkpoint to continue from "
                     "(no 'latest')");
  std::string name = *text;
  while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
    name.pop_back();
  std::error_code ec;
  if (name.rfind(kCheckpointPrefix, 0) != 0 || name.find('/') != name.npos ||
      !fs::is_directory(dir_ + "/" + name, ec))
    return makeError("--resume " + dir_ + ": 'latest' names '" + name +
                     "', which is not a checkpoint folder here");
  return dir_ + "/" + name;
}

Expected<std::string> RunDir::save(const runtime::Trainer &trainer,
                                   const runtime::CheckpointState &state,
                                   int64_t keep) {
  std::string name = checkpointName(state.step);
  std::string path = dir_ + "/" + name;
  if (Error err = runtime::writeCheckpoint(path, trainer, state))
    return std::move(err);
  if (Error err = writeText(dir_ + "/" + kLatestFile, name + "\n"))
    return std::move(err);
  std::vector<std::string> all = checkpoints(dir_);
  std::error_code ec;
  for (size_t i = 0; i + size_t(keep) < all.size(); ++i)
    if (all[i] != name)
      fs::remove_all(dir_ + "/" + all[i], ec);
  return path;
}

Error RunDir::keepMetricsUpTo(int64_t step) {
  std::string path = dir_ + "/" + kMetricsFile;
  std::string kept;
  std::error_code ec;
  // A missing file starts afresh; one that cannot be read is an error (it
  // is not emptied).
  if (fs::exists(path, ec)) {
    auto text = io::readRegularFile(path, uint64_t(1) << 32);
    if (!text)
      return text.takeError();
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      auto v = json::Value::parse(line);
      const json::Value *s = v ? v->find("step") : nullptr;
      if (s && s->isInt64() && s->asInt() <= step)
        kept += line + "\n";
    }
  }
  if (Error err = writeText(path, kept))
    return err;
  return openMetrics();
}

Error RunDir::openMetrics() {
  std::string path = dir_ + "/" + kMetricsFile;
  metrics_ = std::fopen(path.c_str(), "a");
  if (!metrics_)
    return makeError(path + ": " + std::strerror(errno));
  return Error::success();
}

Error RunDir::log(const json::Value &line) {
  std::string text = line.dump(json::Value::Layout::Line) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), metrics_) != text.size() ||
      std::fflush(metrics_) != 0)
    return makeError(dir_ + "/" + kMetricsFile + ": " + std::strerror(errno));
  return Error::success();
}

} // namespace tlm::cli
