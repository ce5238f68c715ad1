//===- CudaProfile.cpp - time every kernel launch (TLM_CUDA_PROFILE) ------===//
//
// With TLM_CUDA_PROFILE=FILE, each launch outside a graph recording is
// bracketed by two events on its stream; when the host code waits for the
// stream (mgpuStreamSynchronize: every call's end) the pairs are read and
// added to their kernel's count and time, and when the process exits FILE
// gets one line a kernel, the costliest first. A kernel is named by its
// function, the module it was loaded as (the n-th loaded) and its last
// launch's grid, block and dynamic shared memory, which tell the forms
// apart. The events cost each launch a little; the timings are for ranking
// kernels, not for the benchmark's figures.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/cuda/CudaDriver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace tlm::runtime::cuda::detail {

namespace {

struct KernelStats {
  std::string name; ///< function, module
  std::string shape; ///< the last launch's grid, block, shared memory
  uint64_t calls = 0;
  double ms = 0;
};

struct Profile {
  std::mutex mutex;
  std::string path;
  size_t modules = 0;
  std::map<CUmodule, size_t> moduleIndex;
  std::map<CUfunction, KernelStats> kernels;
  struct Pending {
    CUfunction fn;
    CUevent start, end;
  };
  std::vector<Pending> pending;
  std::vector<CUevent> spare;
};

Profile &profile() {
  static Profile p;
  return p;
}

void writeReport() {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  std::vector<const KernelStats *> rows;
  for (auto &[fn, k] : p.kernels)
    if (k.calls)
      rows.push_back(&k);
  std::sort(rows.begin(), rows.end(),
            [](const KernelStats *a, const KernelStats *b) {
              return a->ms > b->ms;
            });
  FILE *f = std::fopen(p.path.c_str(), "w");
  if (!f)
    return;
  std::fprintf(f, "kernel\tlaunch\tcalls\ttotal_ms\tmean_us\n");
  for (const KernelStats *k : rows)
    std::fprintf(f, "%s\t%s\t%llu\t%.4f\t%.2f\n", k->name.c_str(),
                 k->shape.c_str(), static_cast<unsigned long long>(k->calls),
                 k->ms, 1000.0 * k->ms / k->calls);
  std::fclose(f);
}

CUevent takeEvent(const Driver &d, Profile &p) {
  if (!p.spare.empty()) {
    CUevent e = p.spare.back();
    p.spare.pop_back();
    return e;
  }
  CUevent e = nullptr;
  d.eventCreate(&e, 0);
  return e;
}

} // namespace

bool profiling() {
  static const bool on = [] {
    const char *path = std::getenv("TLM_CUDA_PROFILE");
    if (!path || !*path)
      return false;
    profile().path = path;
    std::atexit(writeReport);
    return true;
  }();
  return on && state().driver.eventElapsedTime;
}

void profileModule(CUmodule module) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.moduleIndex.emplace(module, p.modules++);
}

void profileFunction(CUfunction fn, CUmodule module, const char *name) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto it = p.moduleIndex.find(module);
  p.kernels[fn].name =
      std::string(name) + " (module " +
      (it == p.moduleIndex.end() ? std::string("?")
                                 : std::to_string(it->second)) +
      ")";
}

void *profileStart(const Driver &d, CUstream stream) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  CUevent start = takeEvent(d, p);
  if (start)
    d.eventRecord(start, stream);
  return start;
}

void profileEnd(const Driver &d, CUfunction fn, void *start, CUstream stream,
                const std::string &shape) {
  if (!start)
    return;
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  CUevent end = takeEvent(d, p);
  if (!end) {
    p.spare.push_back(static_cast<CUevent>(start));
    return;
  }
  d.eventRecord(end, stream);
  p.pending.push_back({fn, static_cast<CUevent>(start), end});
  p.kernels[fn].shape = shape;
}

void profileCollect(const Driver &d) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (const Profile::Pending &pair : p.pending) {
    float ms = 0;
    if (d.eventSynchronize(pair.end) == 0 &&
        d.eventElapsedTime(&ms, pair.start, pair.end) == 0) {
      KernelStats &k = p.kernels[pair.fn];
      ++k.calls;
      k.ms += ms;
    }
    p.spare.push_back(pair.start);
    p.spare.push_back(pair.end);
  }
  p.pending.clear();
}

} // namespace tlm::runtime::cuda::detail
