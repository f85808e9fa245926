// Issue 46, "Hardening, round 3": tables of the classes the third hostile campaign found,
// so they stay fixed. Each row is a command line as a user types it, run as a child under a
// time limit (`timeout`), so a hang fails the test instead of stopping it:
//   - outputs on a full device or past a file-size limit: exit 1 naming the file and the
//     reason, the file that was there byte for byte the same, no temporary left behind;
//   - outputs naming the same file, or an input: exit 2 before the run, the input intact;
//   - a FIFO in every file option: exit 2 naming the option, never a wait for a reader;
//   - an empty value for every file and text option: exit 2 naming the option;
//   - a small address-space limit: the process ends (no wait on OpenBLAS's threads).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/cli/cli_util.h"

namespace {

namespace fs = std::filesystem;
using Output = dtl::test::CliOutput;

// A small gpt run that passes its checks (the lab's small_run) and saves ~24 KB.
const std::string kGpt = "run gpt --ranks 1 --layers 1 --hidden 16 --seq 8 --batch 2 --steps 300 --eval-every 10";

// A fresh folder per test (ctest runs tests in parallel); commands run inside it.
struct Folder {
  std::string path;
  Folder() {
    char name[] = "/tmp/dtlab_output_safety_XXXXXX";
    path = mkdtemp(name);
  }
  ~Folder() { fs::remove_all(path); }
  std::string operator/(const std::string& file) const { return path + "/" + file; }
  // `prefix` is a shell prefix (a limit); the command is dtlab's, bounded to 60 s.
  Output dtlab(const std::string& args, const std::string& prefix = "") const {
    return dtl::test::run_dtlab_shell("cd '" + path + "' && " + prefix + "timeout -s KILL 60 " +
                                      std::string(DTLAB_EXE) + " " + args);
  }
  // Files here other than `keep` (a temporary left behind by a failed write would show).
  std::vector<std::string> others(const std::vector<std::string>& keep) const {
    std::vector<std::string> extra;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string name = e.path().filename().string();
      if (std::find(keep.begin(), keep.end(), name) == keep.end()) extra.push_back(name);
    }
    return extra;
  }
};

std::string contents(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The largest resident size of `command` (run by /bin/sh) and its children, KiB.
long peak_rss_kib(const std::string& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return usage.ru_maxrss;
}

// SIGXFSZ ignored (as a shell with `trap '' XFSZ`): a write past the limit fails with EFBIG.
std::string file_size_limit(int kib) { return "trap '' XFSZ; ulimit -f " + std::to_string(kib) + "; "; }

}  // namespace

// A checkpoint and a trace already there survive a save that cannot finish, and the run's
// report is still printed.
TEST(OutputSafety, AFailedWriteLeavesTheExistingFileIntact) {
  Folder dir;
  ASSERT_EQ(dir.dtlab(kGpt + " --save ck.st").code, 0);
  ASSERT_EQ(dir.dtlab("run collectives --ranks 2 --bytes 4K --trace tr.json").code, 0);
  const std::string ck = contents(dir / "ck.st"), tr = contents(dir / "tr.json"), dtlt = contents(dir / "tr.json.dtlt");
  ASSERT_GT(ck.size(), 16000u);  // more than the 8 KiB limit below
  const struct {
    std::string args, file, says;
  } rows[] = {
      {kGpt + " --save ck.st", "ck.st", "writing the checkpoint to 'ck.st' failed: File too large"},
      {"run collectives --ranks 4 --bytes 64K --trace tr.json", "tr.json",
       "writing the trace to 'tr.json' failed: File too large"},
  };
  for (const auto& r : rows) {
    const Output o = dir.dtlab(r.args, file_size_limit(8));
    EXPECT_EQ(o.code, 1) << r.args << "\n" << o.err;
    EXPECT_NE((o.out + o.err).find(r.says), std::string::npos) << r.args << "\n" << o.out << o.err;
    EXPECT_NE(o.out.find("result:"), std::string::npos) << r.args << ": the report must still print\n" << o.out;
  }
  EXPECT_EQ(contents(dir / "ck.st"), ck) << "the checkpoint changed";
  EXPECT_EQ(contents(dir / "tr.json"), tr) << "the trace changed";
  EXPECT_EQ(contents(dir / "tr.json.dtlt"), dtlt) << "the binary trace changed";
  EXPECT_TRUE(dir.others({"ck.st", "tr.json", "tr.json.dtlt"}).empty())
      << "a temporary was left: " << dir.others({"ck.st", "tr.json", "tr.json.dtlt"}).front();
}

// A file-size limit as a user sets it (`ulimit -f`, SIGXFSZ not ignored): the kernel would end
// the process at the first write past it, the report unprinted and a temporary left behind;
// dtlab ignores SIGXFSZ, so the write fails (EFBIG) and the one writer reports it.
TEST(OutputSafety, APlainFileSizeLimitEndsNoRun) {
  Folder dir;
  ASSERT_EQ(dir.dtlab(kGpt + " --save ck.st").code, 0);
  const std::string ck = contents(dir / "ck.st");
  const Output o = dir.dtlab(kGpt + " --save ck.st", "ulimit -f 8; ");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("writing the checkpoint to 'ck.st' failed: File too large"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("train loss"), std::string::npos) << "the training's report is lost:\n" << o.out;
  EXPECT_EQ(contents(dir / "ck.st"), ck) << "the checkpoint changed";
  EXPECT_TRUE(dir.others({"ck.st"}).empty()) << "a temporary was left: " << dir.others({"ck.st"}).front();
}

// Every lab with --checkpoint-dir: a save that cannot be written ends no run. The report
// prints and ends with the failure (the file and the reason), exit 1; the checkpoint already
// there is byte for byte the same and no .partial folder is left.
TEST(OutputSafety, ACheckpointThatCannotBeWrittenKeepsTheReportAndTheOldOnes) {
  for (const std::string lab : {"ddp", "zero --stage 2", "pipeline"}) {
    Folder dir;
    const std::string run = "run " + lab + " --ranks 2 --checkpoint-dir ck --checkpoint-every 1";
    ASSERT_EQ(dir.dtlab(run + " --steps 1").code, 0) << lab;
    std::vector<std::string> before;
    for (const auto& e : fs::recursive_directory_iterator(dir / "ck"))
      if (e.is_regular_file()) before.push_back(e.path().string() + ":" + contents(e.path().string()));
    ASSERT_FALSE(before.empty()) << lab;
    const Output o = dir.dtlab(run + " --steps 2", file_size_limit(1));
    EXPECT_EQ(o.code, 1) << lab << "\n" << o.err;
    EXPECT_NE(o.out.find("result:"), std::string::npos) << lab << ": the report must print\n" << o.out << o.err;
    EXPECT_NE(o.out.find("not saved"), std::string::npos) << lab << "\n" << o.out;
    EXPECT_NE(o.out.find("File too large"), std::string::npos) << lab << ": the reason\n" << o.out;
    EXPECT_NE(o.out.find(".safetensors"), std::string::npos) << lab << ": the file\n" << o.out;
    std::vector<std::string> after;
    for (const auto& e : fs::recursive_directory_iterator(dir / "ck")) {
      EXPECT_EQ(e.path().string().find(".partial"), std::string::npos) << lab << ": left " << e.path();
      if (e.is_regular_file()) after.push_back(e.path().string() + ":" + contents(e.path().string()));
    }
    std::sort(before.begin(), before.end()), std::sort(after.begin(), after.end());
    EXPECT_EQ(after, before) << lab << ": the checkpoints already there changed";
  }
}

// A full device: exit 1 with the system's words, the report printed first.
TEST(OutputSafety, SavingToAFullDeviceSaysWhyAndKeepsTheReport) {
  Folder dir;
  const Output o = dir.dtlab(kGpt + " --save /dev/full");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("--save: writing the checkpoint to '/dev/full' failed: No space left on device"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("train loss"), std::string::npos) << "the training's report is lost:\n" << o.out;
}

// Two outputs on one file, or an output on an input: refused before the run, input intact.
TEST(OutputSafety, OutputsNamingTheSameFileAreRefusedBeforeTheRun) {
  Folder dir;
  ASSERT_EQ(dir.dtlab(kGpt + " --save ck.st").code, 0);
  const std::string ck = contents(dir / "ck.st");
  const struct {
    std::string args, says;
  } rows[] = {
      {kGpt + " --save X --trace X", "name the same file"},
      {kGpt + " --save ./X --trace X", "name the same file"},
      {kGpt + " --save X.dtlt --trace X", "name the same file"},
      {kGpt + " --load ck.st --trace ck.st", "names the file --load reads"},
      {kGpt + " --load ck.st --save ck.st", "names the file --load reads"},
      {kGpt + " --load ck.st --save ../" + fs::path(dir.path).filename().string() + "/ck.st",
       "names the file --load reads"},
  };
  for (const auto& r : rows) {
    const Output o = dir.dtlab(r.args);
    EXPECT_EQ(o.code, 2) << r.args << "\n" << o.err;
    EXPECT_NE(o.err.find(r.says), std::string::npos) << r.args << "\n" << o.err;
  }
  EXPECT_EQ(contents(dir / "ck.st"), ck) << "the checkpoint changed";
  EXPECT_TRUE(dir.others({"ck.st"}).empty()) << "left: " << dir.others({"ck.st"}).front();
}

// A FIFO has no writer or reader on the other side: every file option refuses it at once.
TEST(OutputSafety, AFifoInEveryFileOptionIsRefused) {
  Folder dir;
  ASSERT_EQ(mkfifo((dir / "pipe").c_str(), 0644), 0);
  const struct {
    std::string args, option;
  } rows[] = {
      {kGpt + " --load pipe", "--load"},
      {kGpt + " --save pipe", "--save"},
      {"run collectives --ranks 2 --trace pipe", "--trace"},
      {"bench all_reduce --ranks 2 -b 1K -e 4K --json pipe", "--json"},
      {"bench-kernels --batch 16 --width 32 --elements 64K --repeats 1 --json pipe", "--json"},
      {"grade --exercise ring_all_reduce --json pipe", "--json"},
      {"simulate --model 7b --gpus 8 --dp 8 --trace pipe", "--trace"},
  };
  for (const auto& r : rows) {
    const Output o = dir.dtlab(r.args);
    EXPECT_EQ(o.code, 2) << r.args << "\n" << o.err;
    EXPECT_NE(o.err.find(r.option + " 'pipe'"), std::string::npos) << r.args << "\n" << o.err;
  }
}

// "" never means "none": every command, every file and text option.
TEST(OutputSafety, AnEmptyValueIsAUsageErrorNamingTheOption) {
  Folder dir;
  const struct {
    std::string args, option;
  } rows[] = {
      {"run collectives --trace ''", "--trace"},
      {kGpt + " --save ''", "--save"},
      {kGpt + " --load ''", "--load"},
      {"run collectives --link ''", "--link"},
      {"run collectives --inject-fault ''", "--inject-fault"},
      {"run collectives --bytes ''", "--bytes"},
      {"bench all_reduce --json ''", "--json"},
      {"plan --model ''", "--model"},
      {"simulate --model 7b --gpus 8 --dp 8 --trace ''", "--trace"},
      {"grade --exercise ''", "--exercise"},
  };
  for (const auto& r : rows) {
    const Output o = dir.dtlab(r.args);
    EXPECT_EQ(o.code, 2) << r.args << "\n" << o.err;
    EXPECT_NE(o.err.find(r.option + " was given an empty value"), std::string::npos) << r.args << "\n" << o.err;
  }
}

// The messages the campaign found wrong, each as it should read.
TEST(OutputSafety, UsageMessagesSayWhatIsWrong) {
  Folder dir;
  const struct {
    std::string args, says;
  } rows[] = {
      {"run --ranks 2 gpt", "--ranks came before the lab's name"},
      {"run collectives --ranks 2 --ranks 3",
       "--ranks was given 2 times; give it once (see 'dtlab run collectives --help')"},
      {"run collectives --ranks 2 --link-bw 10 --link-latency 5000000 --timeout 1", "is not below --timeout"},
      {"plan --layers 2 --hidden 100 --heads 3 --seq 64 --vocab 100", "hidden 100 must be divisible by heads 3"},
      {"plan --layers 1 --hidden 1 --heads 100000 --seq 8 --vocab 0", "hidden 1 must be divisible by heads 100000"},
      // simulate's trace estimated before it is built (it wrote 1 GB+ or ended in bad_alloc)
      {"simulate --model 175b --gpus 16384 --dp 128 --tp 8 --pp 16 --ranks-in-trace 0-255 --steps 1000 --trace "
       "big.json",
       "lower --steps or --ranks-in-trace"},
  };
  for (const auto& r : rows) {
    const Output o = dir.dtlab(r.args);
    EXPECT_EQ(o.code, 2) << r.args << "\n" << o.err;
    EXPECT_NE(o.err.find(r.says), std::string::npos) << r.args << "\n" << o.err;
  }
  EXPECT_TRUE(dir.others({}).empty()) << "a refused command left " << dir.others({}).front();
  // Memory refused before anything per rank is allocated, in a unit that shows the figure.
  const Output big = dir.dtlab("run collectives --ranks 4096", "DTL_MEMORY_LIMIT=64M ");
  EXPECT_EQ(big.code, 2) << big.err;
  EXPECT_EQ(big.err.find(" 0.0 GB"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("--ranks"), std::string::npos) << big.err;
  // ... and before the trace tables and threads of 4096 ranks: refused at 2.5 GB and 12 s.
  const long peak_kib = peak_rss_kib(std::string(DTLAB_EXE) + " run collectives --ranks 4096 --bytes 1G 2>/dev/null");
  std::printf("run collectives --ranks 4096 --bytes 1G: refused at a peak of %ld KiB\n", peak_kib);
  EXPECT_LT(peak_kib, 300 * 1024) << "the refusal came after per-rank allocations";
}

// Under a small address-space limit the process ends: `dtlab list` used to wait forever for
// OpenBLAS's worker threads at exit, and a refused run printed its message and then hung.
TEST(OutputSafety, ASmallAddressSpaceLimitEndsTheProcess) {
  Folder dir;
  const Output list = dir.dtlab("list", "ulimit -v 300000; ");
  EXPECT_EQ(list.code, 0) << list.err;  // (137: killed by the time limit, a hang)
  const Output run = dir.dtlab("run collectives --ranks 2 --bytes 4K", "ulimit -v 300000; ");
  EXPECT_TRUE(run.code == 0 || run.code == 2) << "exit " << run.code << "\n" << run.err;
  if (run.code == 2) { EXPECT_NE(run.err.find("ulimit -v"), std::string::npos) << run.err; }
}

// A checkpoint whose n_head is "4\0" (a JSON "\u0000"): the message stopped at the NUL and
// read "n_head is 4" for a model of 4 heads. Now the value is named as damaged, escaped.
TEST(OutputSafety, AHeadCountWithANulIsNamedAsDamaged) {
  Folder dir;
  const std::string one_step = "run gpt --ranks 1 --layers 1 --hidden 16 --seq 8 --batch 2 --steps 1";
  dir.dtlab(one_step + " --save ck.st");  // (one step fails the loss checks; the file is written)
  const std::string file = contents(dir / "ck.st");
  ASSERT_GT(file.size(), 8u);
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  std::string header = file.substr(8, n);
  const auto at = header.find("\"n_head\":\"4\"");
  ASSERT_NE(at, std::string::npos) << header;
  header.replace(at, 12, "\"n_head\":\"4\\u0000\"");
  header.append((8 - header.size() % 8) % 8, ' ');  // the data stays 8-byte aligned
  const std::uint64_t size = header.size();
  std::ofstream(dir / "nul.st", std::ios::binary)
      << std::string(reinterpret_cast<const char*>(&size), 8) << header << file.substr(8 + n);
  const Output o = dir.dtlab(one_step + " --load nul.st");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("n_head \"4\\x00\" is not a whole number"), std::string::npos) << o.err;
}
