// Runs the dtlab binary as a user would and captures its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace dtl::test {

struct CliOutput {
  int code = -1;    // exit code; -1 if killed by a signal
  std::string out;  // stdout
  std::string err;  // stderr
};

// A shell command line (a limit set first, say), with its stderr kept apart.
inline CliOutput run_dtlab_shell(const std::string& command) {
  // A file of its own per call: ctest runs tests as parallel processes.
  char err_template[] = "/tmp/dtlab_cli_stderr_XXXXXX";
  const int fd = mkstemp(err_template);
  if (fd >= 0) close(fd);
  const std::string err_file = err_template;
  const std::string cmd = "(" + command + ") 2>" + err_file;
  CliOutput o;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return o;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.out.append(buf, n);
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_file);
  std::stringstream ss;
  ss << f.rdbuf();
  o.err = ss.str();
  std::remove(err_file.c_str());
  return o;
}

inline CliOutput run_dtlab(const std::string& args) { return run_dtlab_shell(std::string(DTLAB_EXE) + " " + args); }

}  // namespace dtl::test
