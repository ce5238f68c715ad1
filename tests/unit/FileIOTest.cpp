//===- FileIOTest.cpp - the guarantees of lib/io/FileIO.h -----------------===//
//
// Outputs appear whole or not at all, keep the old file until committed,
// take the umask's mode, leave links as links; inputs must be regular files
// and are read within a bound; a temporary registered with RemoveOnSignal
// is gone when a signal ends the process.
//
//===----------------------------------------------------------------------===//

#include "lib/io/FileIO.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tlm;

namespace {

class FileIO : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tlm-fileio-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }
  static std::string contents(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write(const std::string &p, const std::string &text) {
    std::ofstream(p, std::ios::binary) << text;
  }
  /// The names in the folder (to see no temporary is left).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    DIR *d = ::opendir(dir.c_str());
    while (dirent *e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    ::closedir(d);
    return names;
  }
  std::string dir;
};

TEST_F(FileIO, AnUncommittedFileLeavesTheOldOneAndNoTemporary) {
  write(path("out"), "old");
  {
    auto f = io::AtomicFile::create(path("out"));
    ASSERT_TRUE(bool(f));
    ASSERT_FALSE(f->write("new contents"));
    EXPECT_EQ(contents(path("out")), "old"); // not until commit
  }
  EXPECT_EQ(contents(path("out")), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"out"});
}

TEST_F(FileIO, ACommittedFileReplacesTheOldOneWithTheUmasksMode) {
  write(path("out"), "old");
  mode_t old = ::umask(027);
  auto f = io::AtomicFile::create(path("new"));
  ::umask(old);
  ASSERT_TRUE(bool(f));
  ASSERT_FALSE(f->write("data"));
  ASSERT_FALSE(f->commit());
  EXPECT_EQ(contents(path("new")), "data");
  struct stat st;
  ASSERT_EQ(::stat(path("new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(FileIO, ALinkToAFileStaysALink) {
  write(path("target"), "old");
  ASSERT_EQ(::symlink("target", path("link").c_str()), 0);
  auto f = io::AtomicFile::create(path("link"));
  ASSERT_TRUE(bool(f));
  ASSERT_FALSE(f->write("new"));
  ASSERT_FALSE(f->commit());
  struct stat st;
  ASSERT_EQ(::lstat(path("link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(contents(path("target")), "new");
}

TEST_F(FileIO, AFolderIsNeitherAnOutputNorAnInput) {
  auto out = io::AtomicFile::create(dir);
  ASSERT_FALSE(bool(out));
  EXPECT_NE(out.takeError().message().find("is a folder"), std::string::npos);
  auto in = io::readRegularFile(dir, 100);
  ASSERT_FALSE(bool(in));
  EXPECT_NE(in.takeError().message().find("folder"), std::string::npos);
}

TEST_F(FileIO, AFifoInputIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  auto in = io::openRegularFile(path("fifo")); // no writer: would block
  ASSERT_FALSE(bool(in));
  EXPECT_NE(in.takeError().message().find("FIFO"), std::string::npos);
}

TEST_F(FileIO, ReadsAreBounded) {
  write(path("big"), std::string(100, 'x'));
  auto ok = io::readRegularFile(path("big"), 100);
  ASSERT_TRUE(bool(ok));
  EXPECT_EQ(ok->size(), 100u);
  auto over = io::readRegularFile(path("big"), 99);
  ASSERT_FALSE(bool(over));
  (void)over.takeError();
}

TEST_F(FileIO, ASignalRemovesARegisteredTemporary) {
  write(path("temp"), "half-linked");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    io::RemoveOnSignal guard(path("temp"));
    ::raise(SIGTERM);
    ::_exit(0); // not reached: SIGTERM's default ends the child
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_TRUE(entries().empty());
}

TEST_F(FileIO, AReleasedTemporarySurvivesTheSignal) {
  write(path("kept"), "renamed into place");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    { io::RemoveOnSignal guard(path("kept")); }
    ::raise(SIGTERM);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(entries(), std::vector<std::string>{"kept"});
}

TEST_F(FileIO, SyncFileNamesAMissingFile) {
  Error err = io::syncFile(path("absent"));
  ASSERT_TRUE(bool(err));
  EXPECT_NE(err.message().find("absent"), std::string::npos);
}

} // namespace
