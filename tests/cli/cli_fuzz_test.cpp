// The CLI fuzz table: every option every dtlab command declares (read from its own --help,
// so a new option is covered the day it is added) × hostile values, each run as a child
// process under an address-space limit and a time limit. Each must end with exit 0 (the
// value was fine and the run passed) or 2 (a usage error whose message names the option)
// — never a signal, a hang, exit 1 or more than 2 GiB. The ASan/UBSan build runs the same
// table (tests/run_all.sh); there the address-space limit is left out (ASan reserves
// terabytes of shadow address space), and DTL_MEMORY_LIMIT plus the check of each run's
// peak resident size hold the same 2 GiB.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "labs/lab.h"
#include "tests/cli/cli_util.h"

namespace {

constexpr long kLimitBytes = 2L << 30;  // 2 GiB
constexpr int kTimeLimitS = 60;

struct Option {
  std::vector<std::string> names;  // "-b", "--minbytes"
  bool takes_value = true;
  bool numeric = false;  // declared INT, UINT or FLOAT: a value that is no number must be refused
};

// The options in `dtlab <command> --help` (CLI11's format: "  -b,--minbytes TEXT=32M  help").
std::vector<Option> declared_options(const std::string& command) {
  const auto help = dtl::test::run_dtlab(command + " --help");
  std::vector<Option> out;
  std::istringstream lines(help.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("  -", 0) != 0) continue;
    const std::size_t end = line.find(' ', 2);
    const std::string names = line.substr(2, end == std::string::npos ? std::string::npos : end - 2);
    if (names.find("help") != std::string::npos) continue;
    Option o;
    std::istringstream parts(names);
    for (std::string n; std::getline(parts, n, ',');) o.names.push_back(n);
    o.takes_value = end != std::string::npos && end + 1 < line.size() && line[end + 1] != ' ';
    const std::string type = o.takes_value ? line.substr(end + 1, line.find_first_of(" :=[", end + 1) - end - 1) : "";
    o.numeric = type == "INT" || type == "UINT" || type == "FLOAT";
    out.push_back(o);
  }
  return out;
}

struct Outcome {
  int code = -1, signal = 0;
  bool timed_out = false;
  long peak_bytes = 0;
  double seconds = 0;
  std::string err;
};

// Runs dtlab with argv in `dir`, stdout discarded, under the limits.
Outcome run_limited(const std::vector<std::string>& args, const std::string& dir, bool limit_address_space) {
  const std::string err_path = dir + "/stderr.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    const int out = open("/dev/null", O_WRONLY), err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    if (limit_address_space) {
      const rlimit as{rlim_t(kLimitBytes), rlim_t(kLimitBytes)};
      setrlimit(RLIMIT_AS, &as);
    }
    setenv("DTL_MEMORY_LIMIT", std::to_string(kLimitBytes).c_str(), 1);  // what dtlab may plan for, ASan too
    std::vector<char*> argv{const_cast<char*>(DTLAB_EXE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(DTLAB_EXE, argv.data());
    _exit(127);
  }
  Outcome o;
  int status = 0;
  rusage usage{};
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(kTimeLimitS);
  while (wait4(pid, &status, WNOHANG, &usage) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      o.timed_out = true;
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.peak_bytes = usage.ru_maxrss * 1024L;
  std::ifstream f(err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  o.err = ss.str();
  return o;
}

// Each command with options that keep a valid run small; the fuzzed option replaces its own.
const std::vector<std::pair<std::string, std::map<std::string, std::string>>> kCommands = {
    {"run collectives", {{"--ranks", "2"}, {"--bytes", "4K"}, {"--iters", "1"}, {"--warmup", "0"}, {"--timeout", "2"}}},
    {"run ddp",
     {{"--ranks", "2"}, {"--width", "16"}, {"--depth", "2"}, {"--batch", "8"}, {"--steps", "2"}, {"--timeout", "2"}}},
    {"bench all_reduce",
     {{"--ranks", "2"},
      {"--minbytes", "1K"},
      {"--maxbytes", "4K"},
      {"--iters", "1"},
      {"--warmup_iters", "0"},
      {"--timeout", "2"}}},
    {"bench-kernels", {{"--batch", "16"}, {"--width", "32"}, {"--elements", "64K"}, {"--repeats", "1"}}},
    {"bench-step", {{"--width", "32"}, {"--depth", "2"}, {"--batch", "16"}, {"--steps", "1"}, {"--warmup", "0"}}},
    {"grade", {{"--exercise", "sync_this_micro_batch"}}},
    {"plan", {{"--model", "7b"}, {"--dp", "8"}}},
};

const std::vector<std::string> kHostile = {"0", "-1", "2147483648", "1e30", "nan", "inf", "", "12Q", "1.0000001"};

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

struct Case {
  std::vector<std::string> args;
  Option option;
  Outcome outcome;
};

// The command line of a case, after checking that it ended by itself, within its time and
// memory (no hang, no signal, no runaway allocation).
std::string expect_ended(const Case& c) {
  const Outcome& o = c.outcome;
  std::string line = "dtlab";
  for (const auto& a : c.args) line += " '" + a + "'";
  EXPECT_FALSE(o.timed_out) << line << ": still running after " << kTimeLimitS << " s";
  EXPECT_EQ(o.signal, 0) << line << ": killed by signal " << o.signal << "\n" << o.err;
  EXPECT_LE(o.peak_bytes, kLimitBytes) << line << ": peak " << o.peak_bytes << " B";
  return line;
}

std::vector<Case> fuzz_cases() {
  std::vector<Case> cases;
  for (const auto& [command, base] : kCommands) {
    const std::vector<Option> options = declared_options(command);
    EXPECT_FALSE(options.empty()) << "no options parsed from 'dtlab " << command << " --help'";
    for (const Option& opt : options) {
      if (!opt.takes_value) continue;
      for (const std::string& value : kHostile) {
        std::vector<std::string> args = words(command);
        for (const auto& [name, v] : base)
          if (std::find(opt.names.begin(), opt.names.end(), name) == opt.names.end())
            args.insert(args.end(), {name, v});
        args.insert(args.end(), {opt.names.back(), value});
        cases.push_back({args, opt, {}});
      }
    }
  }
  return cases;
}

// Runs the cases on two workers (this machine has two cores), each in a folder of its own
// where stray output files (--trace nan) land.
void run_all(std::vector<Case>& cases, bool limit_as) {
  auto worker = [&](std::size_t first) {
    char dir_template[] = "/tmp/dtlab_cli_fuzz_XXXXXX";
    const std::string dir = mkdtemp(dir_template);
    for (std::size_t i = first; i < cases.size(); i += 2) cases[i].outcome = run_limited(cases[i].args, dir, limit_as);
    std::system(("rm -rf '" + dir + "'").c_str());
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
}

}  // namespace

// Combinations: two and three options of one lab at once (from the lab's own table,
// LabInfo::options), each at a value drawn from its valid range's ends, its choices and the
// hostile ones, on the lab's small run (LabInfo::small_run, with a 5 s timeout). Seeded:
// the same table every run.

std::vector<std::string> values_of(const dtl::OptionSpec& o) {
  std::vector<std::string> v = {"-1", "nan", "1e30"};  // (fewer hostile ones than alone: most combinations should run)
  if (o.kind == dtl::OptionKind::choice) v.insert(v.end(), o.choices.begin(), o.choices.end());
  if (o.kind == dtl::OptionKind::integer || o.kind == dtl::OptionKind::number || o.kind == dtl::OptionKind::bytes) {
    char buf[64];
    for (double x : {o.min, o.max, o.min + 1, o.max + 1}) {
      std::snprintf(buf, sizeof buf, "%.17g", x);
      v.push_back(buf);
    }
  }
  v.push_back(o.default_value);
  return v;
}

std::vector<Case> combination_cases(int per_lab) {
  std::mt19937 rng(20261124);
  std::vector<Case> cases;
  for (const dtl::LabInfo& lab : dtl::lab_registry()) {
    EXPECT_FALSE(lab.small_run.empty()) << "the lab " << lab.name << " declares no small_run in its LabInfo";
    std::vector<std::string> base;
    for (const auto& [flag, value] : lab.small_run) base.insert(base.end(), {"--" + flag, value});
    base.insert(base.end(), {"--timeout", "5"});
    if (lab.small_run.empty() || lab.options.size() < 2) continue;
    for (int k = 0; k < per_lab; ++k) {
      std::vector<std::size_t> picked;
      const std::size_t n = 2 + std::size_t(k % 2);  // two options, then three
      while (picked.size() < std::min(n, lab.options.size())) {
        const std::size_t i = rng() % lab.options.size();
        if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
      }
      std::vector<std::string> args = {"run", lab.name};
      std::vector<std::string> fuzzed;
      for (std::size_t i : picked) fuzzed.push_back("--" + lab.options[i].name);
      for (std::size_t j = 0; j < base.size(); j += 2)  // the base, less the fuzzed options
        if (std::find(fuzzed.begin(), fuzzed.end(), base[j]) == fuzzed.end())
          args.insert(args.end(), {base[j], base[j + 1]});
      for (std::size_t i : picked) {
        const std::vector<std::string> values = values_of(lab.options[i]);
        args.insert(args.end(), {"--" + lab.options[i].name, values[rng() % values.size()]});
      }
      Option o;
      o.names = fuzzed;
      cases.push_back({args, o, {}});
    }
  }
  return cases;
}

TEST(CliFuzz, CombinationsOfEachLabsOptionsEndCleanly) {
  const bool limit_as = std::getenv("DTL_FUZZ_NO_ADDRESS_LIMIT") == nullptr;  // set under ASan
  std::vector<Case> cases = combination_cases(24);
  run_all(cases, limit_as);
  int usage_errors = 0;
  for (const Case& c : cases) {
    const Outcome& o = c.outcome;
    const std::string line = expect_ended(c);
    // 0: ran and passed; 2: refused, saying why; 1: ran and a check of the lab failed at
    // these settings (a report, not a crash: its stderr names the failed check).
    const bool failed_check = o.code == 1 && o.err.find("dtlab: the run failed") == std::string::npos;
    EXPECT_TRUE(o.code == 0 || o.code == 2 || failed_check) << line << ": exit " << o.code << "\n" << o.err;
    if (o.code != 2) continue;
    ++usage_errors;
    EXPECT_NE(o.err.find("dtlab: error:"), std::string::npos) << line << "\n" << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << line << ": one line, saying what to do\n" << o.err;
  }
  std::printf("%zu combinations, %d usage errors\n", cases.size(), usage_errors);
  EXPECT_GE(cases.size(), 150u);
}

TEST(CliFuzz, HostileValuesForEveryDeclaredOptionEndCleanly) {
  const bool limit_as = std::getenv("DTL_FUZZ_NO_ADDRESS_LIMIT") == nullptr;  // set under ASan
  std::vector<Case> cases = fuzz_cases();
  run_all(cases, limit_as);
  int usage_errors = 0;
  for (const Case& c : cases) {
    const Outcome& o = c.outcome;
    const std::string line = expect_ended(c);
    // --inject-fault/--inject-hang exist to make a run fail: exit 1 naming the fault is their success.
    const bool injected = o.code == 1 && (o.err.find("injected fault") != std::string::npos ||
                                          o.err.find("on purpose") != std::string::npos);
    EXPECT_TRUE(o.code == 0 || o.code == 2 || injected) << line << ": exit " << o.code << "\n" << o.err;
    const std::string& value = c.args.back();
    const bool not_a_number = value.empty() || value == "nan" || value == "inf" || value == "12Q";
    if (c.option.numeric && not_a_number) {
      EXPECT_EQ(o.code, 2) << line << ": a number option accepted '" << value << "'\n" << o.err;
    }
    if (o.code != 2) continue;
    ++usage_errors;
    bool named = false;
    for (const auto& n : c.option.names) named = named || o.err.find(n) != std::string::npos;
    EXPECT_TRUE(named) << line << ": the message must name the option\n" << o.err;
  }
  std::vector<const Case*> slowest;
  for (const Case& c : cases) slowest.push_back(&c);
  std::sort(slowest.begin(), slowest.end(),
            [](const Case* a, const Case* b) { return a->outcome.seconds > b->outcome.seconds; });
  for (std::size_t i = 0; i < 5 && i < slowest.size(); ++i) {
    std::string line;
    for (const auto& a : slowest[i]->args) line += " '" + a + "'";
    std::printf("slow: %.2f s, exit %d:%s\n", slowest[i]->outcome.seconds, slowest[i]->outcome.code, line.c_str());
  }
  std::printf("%zu command lines, %d usage errors, the rest ran and passed (or failed on purpose)\n", cases.size(),
              usage_errors);
  EXPECT_GE(cases.size(), 400u);
}
