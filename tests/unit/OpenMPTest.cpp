//===- OpenMPTest.cpp - libomp starts cleanly -----------------------------===//
//
// runtime::prepareOpenMP() removes the registration file a dead process with
// this pid left behind, which otherwise crashes libomp's start. Each case
// runs in a child process, before libomp is loaded there.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/Program.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string registrationFile() {
  return "/dev/shm/__KMP_REGISTERED_LIB_" + std::to_string(::getpid()) + "_" +
         std::to_string(::getuid());
}

/// In a child: leaves an empty registration file for its own pid (what a
/// process killed while libomp started leaves), optionally prepares, then
/// starts libomp. Returns the child's wait status.
int startWithStaleFile(bool prepare) {
  pid_t child = ::fork();
  if (child == 0) {
    std::string file = registrationFile();
    int fd = ::open(file.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0666);
    if (fd < 0)
      ::_exit(10);
    ::close(fd);
    if (prepare) {
      tlm::runtime::prepareOpenMP();
      if (::access(file.c_str(), F_OK) == 0)
        ::_exit(11);
    }
    void *omp = ::dlopen(TLM_LIBOMP, RTLD_NOW | RTLD_GLOBAL);
    if (!omp)
      ::_exit(12);
    auto setThreads =
        reinterpret_cast<void (*)(int)>(::dlsym(omp, "omp_set_num_threads"));
    setThreads(2);
    // exit(), not _exit(): libomp removes its own registration.
    std::exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  // Whatever the child left (it died, or never started libomp).
  ::unlink(("/dev/shm/__KMP_REGISTERED_LIB_" + std::to_string(child) + "_" +
            std::to_string(::getuid()))
               .c_str());
  return status;
}

} // namespace

TEST(OpenMP, AStaleRegistrationCrashesLibompUnprepared) {
  if (::access("/dev/shm", W_OK) != 0)
    GTEST_SKIP() << "no writable /dev/shm: libomp registers in /tmp";
  int status = startWithStaleFile(/*prepare=*/false);
  // SIGBUS reading the empty file; under a sanitizer its handler reports
  // the fault and exits non-zero instead.
  // (ASan's exit code is 1; the child's own setup failures are 10-12.)
  ASSERT_TRUE(WIFSIGNALED(status) || WEXITSTATUS(status) == 1)
      << "libomp started over an empty registration file (exit "
      << WEXITSTATUS(status) << "): prepareOpenMP() may no longer be needed";
  if (WIFSIGNALED(status))
    EXPECT_EQ(WTERMSIG(status), SIGBUS);
}

TEST(OpenMP, PrepareRemovesTheStaleRegistrationAndLibompStarts) {
  if (::access("/dev/shm", W_OK) != 0)
    GTEST_SKIP() << "no writable /dev/shm: libomp registers in /tmp";
  int status = startWithStaleFile(/*prepare=*/true);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
