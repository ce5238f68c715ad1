//===- CommunicatorTest.cpp - lib/parallel as a build without MPI ---------===//
//
// This test compiles Communicator.cpp without TLM_HAVE_MPI (the define is
// TLMParallel's alone), so it checks what a build without MPI does: one
// process alone, and a refusal, in one line, when a launcher started several.
// The MPI world itself is tested under mpirun (tests/tlm-run/train-mpi*.test).
//
//===----------------------------------------------------------------------===//

#include "lib/parallel/Communicator.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace tlm;

namespace {

/// The launchers' variables, cleared for each test.
class CommunicatorTest : public ::testing::Test {
protected:
  void SetUp() override {
    for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                             "SLURM_STEP_NUM_TASKS"})
      unsetenv(name);
  }
  void TearDown() override { SetUp(); }
};

int reportNothing(const Error &) { return 0; }

TEST_F(CommunicatorTest, AloneIsOneProcess) {
  EXPECT_FALSE(parallel::haveMpi());
  EXPECT_EQ(parallel::launchedRanks(), 1);
  auto comm = parallel::open(10);
  ASSERT_TRUE(bool(comm)) << comm.takeError().message();
  EXPECT_EQ((*comm)->rank(), 0);
  EXPECT_EQ((*comm)->size(), 1);
  EXPECT_EQ((*comm)->localSize(), 1);
}

TEST_F(CommunicatorTest, OneProcessCollectivesAreTheIdentity) {
  auto comm = parallel::open(10);
  ASSERT_TRUE(bool(comm));
  float f[3] = {1.5f, -2, 3};
  ASSERT_FALSE(bool((*comm)->sum(f, 3)));
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], -2.0f);
  double d = 0.25;
  ASSERT_FALSE(bool((*comm)->sum(&d, 1)));
  EXPECT_EQ(d, 0.25);
  uint64_t values[2] = {7, 9};
  std::vector<uint64_t> all;
  ASSERT_FALSE(bool((*comm)->gather(values, 2, all)));
  EXPECT_EQ(all, (std::vector<uint64_t>{7, 9}));
}

TEST_F(CommunicatorTest, OneProcessKeepsItsErrors) {
  auto comm = parallel::open(10);
  ASSERT_TRUE(bool(comm));
  EXPECT_FALSE(bool((*comm)->agree(Error::success())));
  Error agreed = (*comm)->agree(Error::withExitCode(3, "setup failed"));
  ASSERT_TRUE(bool(agreed));
  EXPECT_EQ(agreed.exitCode(), 3);
  EXPECT_EQ(agreed.message(), "setup failed");
  Error ended =
      (*comm)->end(Error::withExitCode(2, "step 4 failed"), reportNothing);
  ASSERT_TRUE(bool(ended));
  EXPECT_EQ(ended.exitCode(), 2);
  EXPECT_EQ(ended.message(), "step 4 failed");
}

TEST_F(CommunicatorTest, SeveralRanksWithoutMpiAreRefused) {
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_EQ(parallel::launchedRanks(), 2);
  auto comm = parallel::open(10);
  ASSERT_FALSE(bool(comm));
  EXPECT_EQ(comm.takeError().message(),
            "this tlm-run was built without MPI, so it cannot train as one "
            "of 2 ranks (install libopenmpi-dev and rebuild: "
            "scripts/setup.sh)");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  // MPICH's and Intel's launchers say it in PMI_SIZE.
  setenv("PMI_SIZE", "4", 1);
  auto pmi = parallel::open(10);
  ASSERT_FALSE(bool(pmi));
  EXPECT_NE(pmi.takeError().message().find("one of 4 ranks"),
            std::string::npos);
}

TEST_F(CommunicatorTest, OneLaunchedRankWithoutMpiRuns) {
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  auto comm = parallel::open(10);
  ASSERT_TRUE(bool(comm)) << comm.takeError().message();
  EXPECT_EQ((*comm)->size(), 1);
  // A value that is not a count is no launcher's.
  setenv("OMPI_COMM_WORLD_SIZE", "2x", 1);
  EXPECT_EQ(parallel::launchedRanks(), 1);
}

} // namespace
