//===- MgpuTest.cpp - the mgpu* functions on the stand-in driver ----------===//
//
// Run with the stand-in libcuda.so.1 (tests/tools/fake-cuda) first on the
// library path (tests/unit/CMakeLists.txt sets it): what the host code's
// calls hand the driver, where no compiled model reaches yet. A kernel with
// more than 48 KiB of dynamic shared memory must be allowed it before its
// launch; the stand-in driver refuses it otherwise, as the real one does.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/cuda/CudaRuntime.h"

#include <cstdint>
#include <cstring>
#include <dlfcn.h>

#include <gtest/gtest.h>

using namespace tlm;

namespace {

void *symbol(const char *name) {
  for (auto [n, address] : runtime::cuda::mgpuSymbols())
    if (std::strcmp(n, name) == 0)
      return address;
  return nullptr;
}

/// mgpuLaunchKernel as the host code declares it.
using Launch = void (*)(void *, intptr_t, intptr_t, intptr_t, intptr_t,
                        intptr_t, intptr_t, int32_t, void *, void **, void **,
                        size_t);

/// The stand-in driver, already loaded by the runtime, with its counters.
class Mgpu : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(bool(runtime::cuda::available()))
        << "the stand-in driver is on the library path";
    driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(driver, nullptr);
    launches = counter("tlm_fake_cuda_launches");
    bigShared = counter("tlm_fake_cuda_big_shared_launches");
    refusedShared = counter("tlm_fake_cuda_refused_shared_launches");
    ASSERT_TRUE(launches && bigShared && refusedShared)
        << "the stand-in driver, not a real one";
    launch = reinterpret_cast<Launch>(symbol("mgpuLaunchKernel"));
    ASSERT_NE(launch, nullptr);
  }
  void TearDown() override {
    Error err = runtime::cuda::takeError();
    EXPECT_FALSE(bool(err)) << err.message();
    if (driver)
      ::dlclose(driver);
  }
  long (*counter(const char *name))() {
    return reinterpret_cast<long (*)()>(::dlsym(driver, name));
  }

  void *driver = nullptr;
  long (*launches)() = nullptr, (*bigShared)() = nullptr,
       (*refusedShared)() = nullptr;
  Launch launch = nullptr;
  int kernel = 0; // the stand-in driver runs no kernel
};

TEST_F(Mgpu, LargeDynamicSharedMemoryIsAllowedBeforeTheLaunch) {
  launch(&kernel, 1, 1, 1, 128, 1, 1, 16 * 1024, nullptr, nullptr, nullptr, 0);
  launch(&kernel, 1, 1, 1, 128, 1, 1, 96 * 1024, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(bigShared(), 1);
  EXPECT_EQ(refusedShared(), 0);
}

// tlm-gpu-tile-matmuls launches both of a projection's kernels and gives
// the one the row count does not want an empty grid: nothing may reach the
// driver for it (which would refuse a zero dimension).
TEST_F(Mgpu, AnEmptyGridLaunchesNothing) {
  long before = launches();
  launch(&kernel, 0, 1, 1, 32, 8, 1, 0, nullptr, nullptr, nullptr, 0);
  launch(&kernel, 4, 0, 1, 16, 16, 1, 0, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(launches(), before);
  launch(&kernel, 4, 1, 1, 16, 16, 1, 0, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(launches(), before + 1);
}

// A step recorded as a CUDA graph (cuda::StepGraph): its launches reach the
// GPU when the graph does, its waits are skipped while recording (the
// stand-in driver, as the real one, refuses them), and a step with the
// same operations as the last one updates its executable graph.
TEST_F(Mgpu, ARecordedStepRunsWhenItsGraphLaunches) {
  ASSERT_TRUE(runtime::cuda::StepGraph::supported());
  auto stream = reinterpret_cast<void *(*)()>(symbol("mgpuStreamCreate"));
  auto wait =
      reinterpret_cast<void (*)(void *)>(symbol("mgpuStreamSynchronize"));
  ASSERT_TRUE(stream && wait);
  runtime::cuda::StepGraph graph;
  // Three steps: two of two kernels, then one of three.
  for (int kernels : {2, 2, 3}) {
    ASSERT_FALSE(bool(graph.begin()));
    long before = launches();
    void *s = stream();
    for (int i = 0; i < kernels; ++i)
      launch(&kernel, 4, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr, 0);
    wait(s);
    EXPECT_EQ(launches(), before) << "nothing runs while recording";
    Error err = graph.launch();
    ASSERT_FALSE(bool(err)) << err.message();
    EXPECT_EQ(launches(), before + kernels);
  }
  EXPECT_EQ(graph.launches(), 3);
  EXPECT_EQ(graph.instantiations(), 2) << "the second step updates the first's";

  // A recording abandoned (its step failed) leaves the stream as it was:
  // the next wait reaches the driver again, and the launch after it runs.
  ASSERT_FALSE(bool(graph.begin()));
  graph.abandon();
  long before = launches();
  launch(&kernel, 4, 1, 1, 32, 1, 1, 0, stream(), nullptr, nullptr, 0);
  wait(stream());
  EXPECT_EQ(launches(), before + 1);
}

} // namespace
