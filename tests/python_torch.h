// Finding a Python that can import torch, for tests that check dtlab against PyTorch
// (tests/python/*.py). The first python3 on PATH may be a pyenv or venv one without torch
// while Debian's python3-torch sits under /usr/bin/python3, so both are tried.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dtl::test {

// The interpreter to run, or "" when none imports torch (the caller GTEST_SKIPs, saying so).
inline std::string python_with_torch() {
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return "";
}

inline const char* kNoTorchReason =
    "no python3 here imports torch (tried python3 and /usr/bin/python3); bash .ci/install-deps installs "
    "python3-torch";

// A shell command's exit code and its stdout and stderr together (a check script's report).
struct CommandResult {
  int code = -1;
  std::string output;
};
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace dtl::test
