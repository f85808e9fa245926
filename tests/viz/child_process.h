// Runs a piece of a test in a child process under an address-space and a time limit, so a
// crash, a hang or a runaway allocation is an outcome the test can report instead of the
// end of the test binary. Used by the trace fuzz and the 512-rank memory test.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>

#include "core/error.h"

namespace dtl::test {

struct ChildLimits {
  std::uint64_t address_space = std::uint64_t(2) << 30;  // RLIMIT_AS
  unsigned seconds = 10;                                 // then SIGALRM ends it: a hang
};

struct ChildResult {
  int exit_code = -1;   // 0: the body returned; 1: it threw dtl::Error; 3: another exception
  int signal = 0;       // the signal that ended it (SIGALRM: the time limit)
  std::string message;  // what the body reported, or the exception's what()
  long max_rss_kb = 0;  // peak resident memory of the child
  bool hung() const { return signal == SIGALRM; }
  std::string describe() const {
    if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
    return "exit " + std::to_string(exit_code) + ": " + message;
  }
};

// Sanitizers reserve terabytes of shadow memory: an address-space limit would kill any run.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kCanLimitAddressSpace = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool kCanLimitAddressSpace = false;
#else
inline constexpr bool kCanLimitAddressSpace = true;
#endif
#else
inline constexpr bool kCanLimitAddressSpace = true;
#endif

// body returns the message to report (exit 0); dtl::Error → exit 1, anything else → exit 3.
inline ChildResult run_in_child(const std::function<std::string()>& body, const ChildLimits& limits = {}) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (kCanLimitAddressSpace) {
      const rlimit as{limits.address_space, limits.address_space};
      setrlimit(RLIMIT_AS, &as);
    }
    alarm(limits.seconds);
    int code = 0;
    std::string out;
    try {
      out = body();
    } catch (const Error& e) { code = 1, out = e.what(); } catch (const std::exception& e) {
      code = 3, out = std::string("not a dtl::Error: ") + e.what();
    }
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t n = write(fds[1], out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += std::size_t(n);
    }
    _exit(code);  // no atexit handlers, no gtest teardown in the child
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.message.append(buf, std::size_t(n));
  close(fds[0]);
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return r;
  r.max_rss_kb = usage.ru_maxrss;
  if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
  else
    r.exit_code = WEXITSTATUS(status);
  return r;
}

}  // namespace dtl::test
