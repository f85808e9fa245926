// dtlab — run, step through, measure and grade distributed-training labs.
//
//   dtlab list
//   dtlab run collectives --algo ring --ranks 4 --bytes 64M --trace ring.json
//   dtlab run collectives --algo ring --ranks 4 --bytes 256 --step
//   dtlab bench all_reduce --impl library --ranks 4 -b 8 -e 256M -f 2 --json out.json
//   dtlab bench-kernels --batch 256 --width 1024
//   dtlab bench-step --device cuda --width 4096 --depth 8 --batch 4096
//   dtlab grade --exercise ring_all_reduce --hint 2
//   dtlab learn
//   dtlab plan --model 175b --cluster a100-80gb --gpus 256 --dp 8 --tp 8 --pp 4
//   dtlab simulate --model 175b --gpus 16384 --dp 128 --tp 8 --pp 16 --trace sim.json
//   dtlab analyze /tmp/ddp_traces --json     (the per-rank torch.profiler traces of a PyTorch run)
//
// Exit codes: 0 success, 1 the run failed (a rank failed, a check failed), 2 bad usage.
#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <streambuf>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "exercises/track/unwritten.h"
#include "kernels/cpu/kernels.h"
#include "labs/cli/commands.h"
#include "labs/cli/validators.h"

namespace {

// std::cout's buffer: passes everything to the one it replaces (stdout's FILE, so cout and
// printf stay in order) and remembers errno when a write fails. Output to a full disk
// fails at a flush, perhaps in a rank's thread; by the time main checks, errno is gone.
class ErrnoKeepingBuf : public std::streambuf {
 public:
  explicit ErrnoKeepingBuf(std::streambuf* inner) : inner_(inner) {}
  int first_error() const { return error_.load(); }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    errno = 0;
    const int_type r = inner_->sputc(traits_type::to_char_type(c));
    if (traits_type::eq_int_type(r, traits_type::eof())) keep(errno);
    return r;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    errno = 0;
    const std::streamsize r = inner_->sputn(s, n);
    if (r < n) keep(errno);
    return r;
  }
  int sync() override {
    errno = 0;
    const int r = inner_->pubsync();
    if (r != 0) keep(errno);
    return r;
  }

 private:
  void keep(int err) {
    int none = 0;
    error_.compare_exchange_strong(none, err ? err : EIO);
  }
  std::streambuf* inner_;
  std::atomic<int> error_{0};
};

// Flushes standard output and turns a failed write into an error and exit code 1, as
// coreutils' close_stdout does. Returns the exit code to use.
int finish_standard_output(int code, const ErrnoKeepingBuf& buf) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = buf.first_error() ? buf.first_error() : errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return code;
  std::cerr << "dtlab: error writing standard output: " << std::strerror(err ? err : EIO) << "\n";
  return 1;
}

// Under mpirun or srun every process parses the same command line and meets the same usage
// error: rank 0 alone says it (8 ranks printed it 8 times between MPI_ABORT banners). The
// launcher's variables are read because a usage error may come before MPI is initialized.
bool first_launched_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var); v && *v) return std::string(v) == "0";
  return true;
}

// Where the help for this command line is: "dtlab run gpt --help", "dtlab plan --help".
std::string help_for(int argc, char** argv, const CLI::App& app) {
  std::string where = "dtlab";
  const CLI::App* at = &app;
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : at->get_subcommands({})) sub = s->get_name() == argv[i] ? s : sub;
    if (!sub) break;
    where += " " + sub->get_name();
    at = sub;
  }
  return where == "dtlab" ? "dtlab <command> --help" : where + " --help";
}

// CLI11's words for an option given twice ("--trace: At Most 1 required but received 2") in ours.
std::string usage_words(const CLI::ParseError& e) {
  std::string text = e.what();
  const std::string cli11 = ": At Most 1 required but received ";
  const auto at_most = text.find(cli11);
  if (at_most == std::string::npos) return text;
  return text.substr(0, at_most) + " was given " + text.substr(at_most + cli11.size()) + " times; give it once";
}

int run_dtlab(int argc, char** argv, const ErrnoKeepingBuf& stdout_buf) {
  CLI::App app{"dtlab: an interactive lab for distributed deep-learning training", "dtlab"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  const std::vector<std::pair<std::string, dtl::cli::Command>> commands = {
      {"list", dtl::cli::add_list_command(app)},
      {"run", dtl::cli::add_run_command(app)},
      {"bench", dtl::cli::add_bench_command(app)},
      {"bench-kernels", dtl::cli::add_kernels_bench_command(app)},
      {"bench-step", dtl::cli::add_step_bench_command(app)},
      {"grade", dtl::cli::add_grade_command(app)},
      {"learn", dtl::cli::add_learn_command(app)},
      {"plan", dtl::cli::add_plan_command(app)},
      {"simulate", dtl::cli::add_simulate_command(app)},
      {"analyze", dtl::cli::add_analyze_command(app)},
  };
  try {
    // A first word that is no command (a typo, a lab name without `run`) is named, with the commands.
    if (argc > 1 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const auto& [name, cmd] : commands) {
        names += (names.empty() ? "" : ", ") + name;
        known = known || name == argv[1];
      }
      if (!known) throw dtl::UsageError("unknown command '" + std::string(argv[1]) + "'; the commands are " + names);
    }
    app.parse(argc, argv);
    dtl::cli::require_no_empty_values(app);
    for (const auto& [name, cmd] : commands)
      if (app.get_subcommand(name)->parsed()) return finish_standard_output(cmd(), stdout_buf);
    return 0;
  } catch (const CLI::CallForHelp&) {
    return finish_standard_output(app.exit(CLI::CallForHelp()), stdout_buf);
  } catch (const CLI::CallForAllHelp&) {
    return finish_standard_output(app.exit(CLI::CallForAllHelp()), stdout_buf);
  } catch (const CLI::ParseError& e) {
    // CLI11 has printed nothing yet: say what is wrong in one line, with where to look.
    if (first_launched_rank())
      std::cerr << "dtlab: error: " << usage_words(e) << " (see '" << help_for(argc, argv, app) << "')\n";  // one line
    return 2;
  } catch (const dtl::UsageError& e) {
    if (first_launched_rank()) std::cerr << "dtlab: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtlab: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Thread ranks are threads: glibc would give each one a malloc arena of its own (64 MiB of
  // address space each, up to 8 per core) until an address-space limit is spent on arenas,
  // and OpenBLAS then spins on mmap failing. A few shared arenas serve the ranks as well.
  mallopt(M_ARENA_MAX, dtl::kMallocArenas);
  // A file-size limit (ulimit -f) would end the process with SIGXFSZ mid-write: the report
  // unprinted, a temporary left behind. Ignored, the write fails with EFBIG and the one
  // writer (core/util/atomic_file.h) removes its temporary and names the file and the reason.
  std::signal(SIGXFSZ, SIG_IGN);
  // A lab never fails for an exercise not written yet: its stub runs the reference (the
  // grader, a program of its own, still counts it as missing). exercises/track/unwritten.h
  dtl::ex::run_references_for_unwritten_exercises();
  std::streambuf* const original = std::cout.rdbuf();
  ErrnoKeepingBuf stdout_buf(original);
  std::cout.rdbuf(&stdout_buf);
  const int code = run_dtlab(argc, argv, stdout_buf);
  std::cout.rdbuf(original);                                 // std::cout is flushed again after main returns
  dtl::kernels::end_without_waiting_for_blas_threads(code);  // (ulimit -v: see kernels.h)
  return code;
}
