// Bad command lines found by trying dtlab as a new user would: each is exit 2 with a
// message naming what is wrong, before anything runs; a trace that cannot be written late
// in a run does not hide the report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tests/cli/cli_util.h"

using dtl::test::run_dtlab;

TEST(CliUsage, AnUnknownCommandIsNamedWithTheCommands) {
  for (const char* word : {"foo", "ddp", "collectives"}) {
    const auto o = run_dtlab(word);
    EXPECT_EQ(o.code, 2) << word;
    EXPECT_NE(o.err.find(std::string("unknown command '") + word + "'"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("run"), std::string::npos) << o.err;
  }
}

TEST(CliUsage, NumbersBeyondTheirRangeAreUsageErrorsNamingTheOption) {
  // Each was exit 1 with a bare "stoi", ran with 4 ranks, or silently disabled the watchdog.
  const std::pair<const char*, const char*> cases[] = {
      {"run collectives --inject-fault 99999999999", "--inject-fault"},
      {"run collectives --inject-hang 1:99999999999", "--inject-hang"},
      {"run ddp --slow-rank 99999999999:2", "--slow-rank"},
      {"run collectives --ranks -1", "--ranks"},
      {"run collectives --ranks 2147483648", "--ranks"},
      {"run collectives --timeout 0", "--timeout"},
      {"run collectives --timeout -3", "--timeout"},
      {"run collectives --timeout nan", "--timeout"},
      {"run collectives --link-bw nan", "--link-bw"},
      {"run collectives --link-bw 10 --link-latency inf", "--link-latency"},
      {"run ddp --link pcie4 --link-slowdown nan", "--link-slowdown"},
      {"run ddp --width 1e30", "--width"},
      {"run ddp --bucket-mb -1", "--bucket-mb"},
      {"run collectives --iters -1", "--iters"},
      {"bench-step --width 0", "--width"},
      {"run zero --stage 4", "--stage"},
      {"run zero --unit 0", "--unit"},
      {"run zero --ranks 4 --batch 7", "--batch"},
      {"run zero --bytes 1M", "--bytes"},
      {"run zero --precision fp32 --master none", "--master"},
      {"run zero --stage 2 --sweep prefetch", "--sweep"},
      {"run zero --prefetch-depth 0", "--prefetch-depth"},
      {"run zero --prefetch off --prefetch-depth 3", "--prefetch-depth"},
      {"run zero --stage 1 --prefetch off", "--prefetch"},
      {"run zero --stage 2 --bucket-mb 4", "--bucket-mb"},
      {"run pipeline --schedule 1f1b --ranks 4 --micro-batches 2 --batch 8", "micro-batches"},
      {"run pipeline --schedule interleaved --ranks 4 --micro-batches 6 --batch 12", "multiple"},
      {"run pipeline --ranks 4 --depth 3", "--depth"},
      {"run pipeline --schedule 1f1b --chunks 3", "--chunks"},
      {"run pipeline --ranks 4 --stages 2", "--stages"},
      {"run pipeline --schedule 1f1b --compute-us 100 --weight-us 10", "--weight-us"},
      {"run pipeline --batch 10 --micro-batches 4", "--micro-batches"},
      {"run pipeline --schedule dualpipev --ranks 4 --micro-batches 4 --batch 8", "(M=4 < 2P=8)"},
      {"run pipeline --ranks 2 --schedule-csv /nonexistent/schedule.csv", "cannot read the file"},
      // --channels where no algorithm has channels would change nothing (issue 51)
      {"run collectives --algo ring --channels 2", "--channels 2"},
      {"run collectives --algo all --channels 2", "--channels 2"},
      {"run collectives --collective all_gather --channels 2", "--channels 2"},
      {"run collectives --algo ring_sliced --channels 0", "--channels"},
      {"bench all_reduce --impl library --channels 2", "--channels 2"},
      {"bench ping_pong --channels 2", "--channels 2"},
  };
  for (const auto& [args, option] : cases) {
    const auto o = run_dtlab(args);
    EXPECT_EQ(o.code, 2) << "dtlab " << args << "\n" << o.err;
    EXPECT_NE(o.err.find(option), std::string::npos) << "dtlab " << args << " must name " << option << ":\n" << o.err;
  }
}

TEST(CliUsage, AnUnwritableTracePathIsRefusedBeforeTheRun) {
  const auto o = run_dtlab("run collectives --ranks 2 --bytes 1K --trace /nonexistent-folder/t.json");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("--trace"), std::string::npos) << o.err;
  EXPECT_EQ(o.out.find("result:"), std::string::npos) << "nothing should have run:\n" << o.out;
}

TEST(CliUsage, ATraceThatCannotBeWrittenLateStillPrintsTheReport) {
  // /dev/full opens fine and fails on write: the run happens, then the trace fails.
  const auto o = run_dtlab("run collectives --ranks 2 --bytes 1K --iters 1 --trace /dev/full");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("result: OK"), std::string::npos) << "the report is lost:\n" << o.out;
  EXPECT_NE(o.err.find("/dev/full"), std::string::npos) << o.err;
}

TEST(CliUsage, DdpHonoursInjectedFaultsAndHangs) {
  // It used to ignore both. DDP posts no sends, so STEP counts its library collectives.
  // With a 5 s watchdog, peers left hanging would end in "watchdog", not in the fault.
  const std::string small = " --ranks 4 --width 32 --depth 3 --batch 16 --steps 3 --timeout 5";
  const auto fault = run_dtlab("run ddp --inject-fault 2:3" + small);
  EXPECT_EQ(fault.code, 1) << fault.err;
  EXPECT_NE(fault.err.find("rank 2 failed: injected fault on rank 2 at its all_reduce #3"), std::string::npos)
      << fault.err;
  EXPECT_EQ(fault.err.find("watchdog"), std::string::npos) << "the peers were left hanging:\n" << fault.err;
  const auto hang =
      run_dtlab("run ddp --inject-hang 1:2 --ranks 3 --width 32 --depth 3 --batch 12 --steps 3 --timeout 1");
  EXPECT_EQ(hang.code, 1) << hang.err;
  EXPECT_NE(hang.err.find("rank 1 waits nothing: it stopped communicating on purpose"), std::string::npos) << hang.err;
}

TEST(CliUsage, ZeroHonoursInjectedFaultsAndIsRefusedWhenTooLarge) {
  // ZeRO posts no sends either: STEP counts its collectives (reduce-scatters, all-gathers).
  const auto fault =
      run_dtlab("run zero --inject-fault 1:4 --ranks 2 --width 32 --depth 3 --batch 8 --steps 2 --timeout 5");
  EXPECT_EQ(fault.code, 1) << fault.err;
  EXPECT_NE(fault.err.find("rank 1 failed: injected fault on rank 1"), std::string::npos) << fault.err;
  EXPECT_EQ(fault.err.find("watchdog"), std::string::npos) << "the peers were left hanging:\n" << fault.err;
  // The memory check runs before anything is allocated.
  const auto big = run_dtlab("run zero --width 60000 --depth 200");
  EXPECT_EQ(big.code, 2) << big.err;
  EXPECT_NE(big.err.find("needs about"), std::string::npos) << big.err;
}

TEST(CliUsage, APipelineStageThatStopsAnsweringIsNamedByTheWatchdog) {
  // Stage 1 hangs at its 3rd send: stage 2 waits for an activation that never comes.
  const auto o = run_dtlab(
      "run pipeline --ranks 4 --inject-hang 1:3 --width 16 --depth 4 --batch 8 --micro-batches 4 --timeout 2");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("waits for the activation of micro-batch"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("from stage 1"), std::string::npos) << o.err;
}

TEST(CliUsage, ADdpRunTooLargeForTheMachineIsRefusedWithItsEstimate) {
  // It used to be killed by the kernel: the check left out activations and the data.
  const auto o = run_dtlab("run ddp --width 1 --depth 1 --batch 4194304");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("needs about"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--batch"), std::string::npos) << o.err;
}

TEST(CliUsage, AGptCheckpointThatDoesNotFitIsExit2NamingTheTensor) {
  const std::string path = testing::TempDir() + "/cli_usage_gpt_" + std::to_string(::getpid()) + ".safetensors";
  const std::string tiny = " --ranks 1 --layers 1 --hidden 32 --heads 2 --seq 16 --batch 2";
  ASSERT_EQ(run_dtlab("run gpt --steps 0" + tiny + " --save " + path).code, 0);
  const auto narrow =
      run_dtlab("run gpt --steps 0 --ranks 1 --layers 1 --hidden 16 --heads 2 --seq 16 --batch 2 --load " + path);
  EXPECT_EQ(narrow.code, 2) << narrow.err;
  EXPECT_NE(narrow.err.find("tensor 'wte'"), std::string::npos) << narrow.err;
  const auto absent = run_dtlab("run gpt --steps 0" + tiny + " --load /nonexistent-folder/g.safetensors");
  EXPECT_EQ(absent.code, 2) << absent.err;
  EXPECT_NE(absent.err.find("/nonexistent-folder/g.safetensors"), std::string::npos) << absent.err;
  const auto unwritable = run_dtlab("run gpt --steps 1" + tiny + " --save /nonexistent-folder/g.safetensors");
  EXPECT_EQ(unwritable.code, 2) << unwritable.err;
  EXPECT_NE(unwritable.err.find("--save"), std::string::npos) << unwritable.err;
  std::remove(path.c_str());
}
