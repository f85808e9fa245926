// Faults in every lab and stage (issue 31): a rank that fails (--inject-fault 1:1) or goes
// silent (--inject-hang 1:1, watchdog --timeout 1) in every lab, every ZeRO stage, every
// pipeline schedule, tensor parallelism (MLP and GPT), the grid (MLP and GPT) and the GPT
// lab. Each case must end soon after the fault (a second, plus the run's start; ASan and
// Open MPI's start-up make the bound generous) with exit code 1 and a message that names
// rank 1. On thread ranks (label unit, so CI runs it under ASan), and with
// DTL_FAULT_TABLE_LAUNCHER set (label mpi) under mpirun.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/cli/cli_util.h"

namespace {

struct Case {
  const char* lab;  // the lab and its (small) options
};

const std::vector<Case> kCases = {
    {"collectives --algo all --bytes 4K"},
    {"ddp --variant all --width 64 --depth 3 --batch 8 --micro-batches 2 --steps 1 --repeat 1"},
    {"zero --stage 0 --width 64 --depth 3 --batch 8 --steps 1 --repeat 1"},
    {"zero --stage 1 --width 64 --depth 3 --batch 8 --steps 1 --repeat 1"},
    {"zero --stage 2 --width 64 --depth 3 --batch 8 --steps 1 --repeat 1"},
    {"zero --stage 3 --width 64 --depth 3 --batch 8 --steps 1 --repeat 1"},
    {"pipeline --schedule gpipe --width 32 --depth 4 --batch 8 --micro-batches 4 --steps 1 --repeat 1"},
    {"pipeline --schedule 1f1b --width 32 --depth 4 --batch 8 --micro-batches 4 --steps 1 --repeat 1"},
    {"pipeline --schedule interleaved --width 32 --depth 4 --batch 8 --micro-batches 4 --steps 1 --repeat 1"},
    {"pipeline --schedule zb-h1 --width 32 --depth 4 --batch 8 --micro-batches 4 --steps 1 --repeat 1"},
    {"tensor_parallel --model mlp --layers 1 --hidden 32 --seq 8 --batch 2 --steps 2"},
    {"tensor_parallel --model gpt --layers 1 --hidden 32 --heads 2 --seq 8 --batch 2 --steps 2"},
    {"grid --tp 1 --pp 2 --layers 2 --hidden 32 --seq 8 --batch 4 --steps 2"},
    {"grid --model gpt --tp 2 --pp 1 --layers 2 --hidden 32 --heads 2 --seq 8 --batch 4 --steps 2"},
    {"gpt --layers 1 --hidden 32 --heads 2 --seq 16 --batch 2 --steps 3 --eval-every 3"},
};

struct Ran {
  dtl::test::CliOutput out;
  double seconds = 0;
};

Ran run(const std::string& args) {
  const char* launcher = std::getenv("DTL_FAULT_TABLE_LAUNCHER");  // e.g. "mpirun --oversubscribe -np 2"
  const bool mpi = launcher && *launcher;
  const std::string cmd = (mpi ? std::string(launcher) + " " : std::string()) + DTLAB_EXE + " run " + args +
                          (mpi ? " --backend mpi" : " --ranks 2");
  const auto t0 = std::chrono::steady_clock::now();
  Ran r{dtl::test::run_dtlab_shell(cmd), 0};
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

TEST(FaultTable, AFailingRankEndsEveryLabNamingIt) {
  for (const Case& c : kCases) {
    const Ran r = run(std::string(c.lab) + " --inject-fault 1:1");
    EXPECT_EQ(r.out.code, 1) << c.lab << "\n" << r.out.err;
    EXPECT_NE(r.out.err.find("rank 1 failed: injected fault on rank 1"), std::string::npos) << c.lab << "\n"
                                                                                            << r.out.err;
    EXPECT_LT(r.seconds, 15.0) << c.lab;
    std::printf("%-100s fault: %.2f s\n", c.lab, r.seconds);
  }
}

TEST(FaultTable, ASilentRankIsNamedByTheWatchdog) {
  for (const Case& c : kCases) {
    const Ran r = run(std::string(c.lab) + " --inject-hang 1:1 --timeout 1");
    EXPECT_EQ(r.out.code, 1) << c.lab << "\n" << r.out.err;
    // Thread ranks: the watchdog's table says what every rank waits on; processes: the
    // silent rank says so itself when it stops (core/comm/mpi/mpi_comm.cpp).
    const bool named = r.out.err.find("rank 1 waits nothing: it stopped") != std::string::npos ||
                       r.out.err.find("rank 1 stops communicating on purpose") != std::string::npos;
    EXPECT_TRUE(named) << c.lab << "\n" << r.out.err;
    EXPECT_LT(r.seconds, 1.0 + 15.0) << c.lab;
    std::printf("%-100s hang: %.2f s\n", c.lab, r.seconds);
  }
}
