//===- Config.cpp - weight lists and parameter counts ---------------------===//

#include "lib/model/Config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

using namespace tlm::model;
namespace io = tlm::io;

std::string_view tlm::model::dtypeName(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32:
    return "f32";
  case WeightDtype::BF16:
    return "bf16";
  case WeightDtype::F16:
    return "f16";
  case WeightDtype::Q8_0:
    return "q8_0";
  case WeightDtype::Q4_0:
    return "q4_0";
  }
  return "?";
}

std::string_view tlm::model::dtypeNames() {
  return "f32, bf16, f16, q8_0, q4_0";
}

bool tlm::model::isQuantized(WeightDtype dtype) {
  return dtype == WeightDtype::Q8_0 || dtype == WeightDtype::Q4_0;
}

WeightDtype tlm::model::matrixFormat(WeightDtype dtype, int64_t dIn) {
  return isQuantized(dtype) && dIn % kQuantBlock != 0 ? WeightDtype::F32
                                                      : dtype;
}

std::optional<tlm::model::WeightDtype>
tlm::model::parseWeightDtype(std::string_view name) {
  for (WeightDtype d : {WeightDtype::F32, WeightDtype::BF16, WeightDtype::F16,
                        WeightDtype::Q8_0, WeightDtype::Q4_0})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

tlm::io::DType tlm::model::storageDType(WeightDtype format) {
  switch (format) {
  case WeightDtype::F32:
    return io::DType::F32;
  case WeightDtype::BF16:
    return io::DType::BF16;
  case WeightDtype::F16:
    return io::DType::F16;
  case WeightDtype::Q8_0:
    return io::DType::I8;
  case WeightDtype::Q4_0:
    return io::DType::U8;
  }
  return io::DType::F32;
}

namespace {
/// Appends the entries of matrix `name` (n, k) in its format under `dtype`.
void addMatrix(std::vector<WeightSpec> &specs, std::string name, int64_t n,
               int64_t k, WeightDtype dtype) {
  WeightDtype f = matrixFormat(dtype, k);
  int64_t stored = f == WeightDtype::Q4_0 ? k / 2 : k;
  specs.push_back({name, {n, stored}, storageDType(f), f, false});
  if (isQuantized(f))
    specs.push_back({std::move(name) + ".scale",
                     {n, k / kQuantBlock},
                     io::DType::F32,
                     f,
                     true});
}
WeightSpec gain(std::string name, int64_t d) {
  return {std::move(name), {d}, io::DType::F32, WeightDtype::F32, false};
}
} // namespace

std::vector<WeightSpec> tlm::model::blockWeightSpecs(const Config &c) {
  int64_t d = c.dModel, kv = c.kvDim();
  std::vector<WeightSpec> specs;
  addMatrix(specs, "attn.q_proj.weight", d, d, c.dtype);
  addMatrix(specs, "attn.k_proj.weight", kv, d, c.dtype);
  addMatrix(specs, "attn.v_proj.weight", kv, d, c.dtype);
  addMatrix(specs, "attn.output_proj.weight", d, d, c.dtype);
  if (c.useRMSNorm)
    specs.push_back(gain("ln1.weight", d));
  addMatrix(specs, "ffn.w1.weight", c.dFF, d, c.dtype);
  addMatrix(specs, "ffn.w2.weight", d, c.dFF, c.dtype);
  if (c.useSwiGLU)
    addMatrix(specs, "ffn.w3.weight", c.dFF, d, c.dtype);
  if (c.useRMSNorm)
    specs.push_back(gain("ln2.weight", d));
  return specs;
}

std::vector<WeightSpec> tlm::model::weightSpecs(const Config &c) {
  std::vector<WeightSpec> specs;
  addMatrix(specs, "token_embeddings.weight", c.vocabSize, c.dModel, c.dtype);
  std::vector<WeightSpec> block = blockWeightSpecs(c);
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (WeightSpec w : block) {
      w.name = "layers." + std::to_string(i) + "." + w.name;
      specs.push_back(std::move(w));
    }
  if (c.useRMSNorm)
    specs.push_back(gain("ln_final.weight", c.dModel));
  if (!c.tieEmbeddings)
    addMatrix(specs, "lm_head.weight", c.vocabSize, c.dModel, c.dtype);
  return specs;
}

int64_t tlm::model::parameterCount(const Config &c) {
  Config wide = c; // one tensor per parameter, one element per weight
  wide.dtype = WeightDtype::F32;
  int64_t n = 0;
  for (const WeightSpec &w : weightSpecs(wide))
    n += w.numElements();
  return n;
}

int64_t tlm::model::weightBytes(const Config &c) {
  int64_t n = 0;
  for (const WeightSpec &w : weightSpecs(c))
    n += w.bytes();
  return n;
}

namespace {

/// The first number in `path`, or -1 (also for cgroup v2's "max").
double fileNumber(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "r");
  if (!f)
    return -1;
  double value = -1;
  if (std::fscanf(f, "%lf", &value) != 1)
    value = -1;
  std::fclose(f);
  return value;
}

/// The number after `key` on a line "key N" (or "key\tN") of the file
/// `path`, or -1.
double keyedNumber(const std::string &path, const char *key) {
  FILE *f = std::fopen(path.c_str(), "r");
  if (!f)
    return -1;
  char line[256];
  double value = -1;
  size_t n = std::strlen(key);
  while (std::fgets(line, sizeof(line), f))
    if (std::strncmp(line, key, n) == 0 && (line[n] == ' ' || line[n] == '\t')) {
      value = std::strtod(line + n + 1, nullptr);
      break;
    }
  std::fclose(f);
  return value;
}

/// The size `key` ("VmSize:") of /proc/self/status, in bytes, or -1.
double statusBytes(const char *key) {
  double kb = keyedNumber("/proc/self/status", key);
  return kb < 0 ? -1 : kb * 1024;
}

/// The memory controller's folder of this process's cgroup (v2 or v1), or "".
std::string cgroupMemoryDir() {
  FILE *f = std::fopen("/proc/self/cgroup", "r");
  if (!f)
    return "";
  char line[512];
  std::string v1, v2;
  while (std::fgets(line, sizeof(line), f)) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n')
      s.pop_back();
    size_t a = s.find(':'), b = s.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      continue;
    std::string controllers = s.substr(a + 1, b - a - 1), path = s.substr(b + 1);
    if (s.compare(0, a, "0") == 0 && controllers.empty())
      v2 = "/sys/fs/cgroup" + path;
    else if (controllers == "memory")
      v1 = "/sys/fs/cgroup/memory" + path;
  }
  std::fclose(f);
  if (!v2.empty() && fileNumber(v2 + "/memory.max") >= 0)
    return v2;
  // Without a cgroup namespace the path is the host's, absent from this
  // mount: the mount's root is then this container's group.
  if (!v1.empty() && fileNumber(v1 + "/memory.limit_in_bytes") < 0)
    return "/sys/fs/cgroup/memory";
  return v1;
}

} // namespace

tlm::model::MemoryLimit tlm::model::memoryLimit(bool available) {
  MemoryLimit limit{double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE),
                    "this machine has"};
  if (available)
    if (double kb = keyedNumber("/proc/meminfo", "MemAvailable:"); kb >= 0)
      limit = {kb * 1024, "this machine has available"};
  auto consider = [&](double headroom, const char *what,
                      bool countsReservations = false) {
    if (headroom >= 0 && headroom < limit.bytes)
      limit = {headroom, what, countsReservations};
  };
  struct rlimit r;
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    if (double size = statusBytes("VmSize:"); size >= 0)
      consider(std::max(0.0, double(r.rlim_cur) - size),
               "the process's RLIMIT_AS (ulimit -v) leaves",
               /*countsReservations=*/true);
  if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    if (double data = statusBytes("VmData:"); data >= 0)
      consider(std::max(0.0, double(r.rlim_cur) - data),
               "the process's RLIMIT_DATA (ulimit -d) leaves",
               /*countsReservations=*/true);
  if (std::string dir = cgroupMemoryDir(); !dir.empty()) {
    bool v2 = fileNumber(dir + "/memory.max") >= 0;
    double max = fileNumber(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    double used = fileNumber(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    // The usage counts the page cache, which the kernel reclaims before it
    // fails an allocation: its inactive part is free to take.
    double cache = keyedNumber(dir + "/memory.stat",
                               v2 ? "inactive_file" : "total_inactive_file");
    if (cache > 0 && used >= cache)
      used -= cache;
    // v1 writes "no limit" as a huge number (2^63 rounded to pages).
    if (max > 0 && max < 1e18 && used >= 0)
      consider(std::max(0.0, max - used), "the cgroup's memory limit leaves");
  }
  return limit;
}

std::string tlm::model::memoryShortfall(double bytes, const std::string &what) {
  MemoryLimit limit = memoryLimit();
  if (bytes <= limit.bytes)
    return "";
  char buf[128];
  std::snprintf(buf, sizeof(buf), " needs %.2f GB but ", bytes / 1e9);
  std::string out = what + buf + limit.what;
  std::snprintf(buf, sizeof(buf), " %.2f GB", limit.bytes / 1e9);
  return out + buf;
}
