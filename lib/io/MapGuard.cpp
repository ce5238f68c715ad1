//===- MapGuard.cpp - a file that shrinks under its mapping ---------------===//

#include "lib/io/MapGuard.h"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unistd.h>

namespace tlm::io {
namespace {

struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  char message[512];
};

Slot slots[16];
std::mutex slotsMutex; // registration only; the handler reads atomics
struct sigaction previous;
bool installed = false;
/// Set by the first thread to report: every worker reading the mapping
/// faults at once, and the message should be written once.
std::atomic<bool> reported{false};

void onSigbus(int sig, siginfo_t *info, void *context) {
  auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot &s : slots) {
    uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin && address >= begin &&
        address < s.end.load(std::memory_order_acquire)) {
      // Another thread is reporting and will end the process.
      if (reported.exchange(true))
        for (;;)
          ::pause();
      ssize_t written = ::write(2, s.message, std::strlen(s.message));
      (void)written;
      ::_exit(1);
    }
  }
  // Not ours: the previous disposition takes it (the fault recurs when this
  // returns), or it is called for a handler that wants the details.
  if (previous.sa_flags & SA_SIGINFO && previous.sa_sigaction) {
    previous.sa_sigaction(sig, info, context);
    return;
  }
  ::sigaction(SIGBUS, &previous, nullptr);
}

} // namespace

void guardMapping(const void *base, size_t size, const std::string &path) {
  std::lock_guard<std::mutex> lock(slotsMutex);
  if (!installed) {
    struct sigaction sa = {};
    sa.sa_sigaction = onSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    installed = ::sigaction(SIGBUS, &sa, &previous) == 0;
  }
  for (Slot &s : slots) {
    if (s.begin.load() != 0)
      continue;
    std::string text = "error: weights: " + path.substr(0, 300) +
                       ": the file shrank while mapped (--weights-load "
                       "mmap); it must not be truncated or rewritten in place "
                       "while tlm runs\n";
    std::strncpy(s.message, text.c_str(), sizeof(s.message) - 1);
    s.message[sizeof(s.message) - 1] = '\0';
    s.end.store(reinterpret_cast<uintptr_t>(base) + size,
                std::memory_order_release);
    s.begin.store(reinterpret_cast<uintptr_t>(base),
                  std::memory_order_release);
    return;
  }
}

void unguardMapping(const void *base) {
  std::lock_guard<std::mutex> lock(slotsMutex);
  for (Slot &s : slots)
    if (s.begin.load() == reinterpret_cast<uintptr_t>(base))
      s.begin.store(0, std::memory_order_release);
}

} // namespace tlm::io
