// Issue 31, "Hardening, round 2": each defect found by the hostile-input campaign, as the
// command that showed it. Every one of these failed (crashed, hung, or ran silently wrong)
// before its fix; now each is refused with exit code 2 and a message that says what to do,
// or ends at once naming the failing rank. (Defects 1, 2, 7, 8, 14 and 15 have their tests
// beside the code they touched: comm_faults_test, cli_test, viz tests, zero_lab_test.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/cli/cli_util.h"

namespace {

using Output = dtl::test::CliOutput;
Output dtlab(const std::string& args) { return dtl::test::run_dtlab(args); }

void expect_usage_error(const std::string& args, const std::string& says) {
  const Output o = dtlab(args);
  EXPECT_EQ(o.code, 2) << "dtlab " << args << "\n" << o.err;
  EXPECT_NE(o.err.find(says), std::string::npos) << "dtlab " << args << "\nshould say: " << says << "\nsaid: " << o.err;
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + name; }

}  // namespace

// (3) batch × seq past an int: "0 tokens" and NaN losses, or a negative tensor dimension.
TEST(Hardening, TokensPerStepPastAnIntAreAUsageError) {
  expect_usage_error("run tensor_parallel --ranks 2 --seq 65536 --batch 65536", "4294967296 tokens per step");
  expect_usage_error("run tensor_parallel --ranks 2 --seq 65536 --batch 32768 --model gpt",
                     "2147483648 tokens per step");
}

// (4) stepping with an injected fault waited for the 60 s watchdog, blaming the wrong rank.
TEST(Hardening, SteppingIntoAnInjectedFaultEndsAtOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  const Output o = dtl::test::run_dtlab_shell("echo c | " + std::string(DTLAB_EXE) +
                                              " run collectives --ranks 3 --bytes 1K --inject-fault 1:0 --step");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("rank 1 failed: injected fault on rank 1"), std::string::npos) << o.err;
}

// (5) `--variant all` ran the accumulate column with 1 micro-batch when 3 did not divide.
TEST(Hardening, DdpNeverReplacesTheMicroBatchesItWasGiven) {
  expect_usage_error("run ddp --ranks 2 --variant all --micro-batches 3", "must divide into --micro-batches 3");
}

// (6) a device as a checkpoint was read until memory ran out.
TEST(Hardening, LoadingFromADeviceIsRefusedBeforeReading) {
  expect_usage_error("run gpt --ranks 1 --steps 0 --load /dev/zero", "'/dev/zero' is not a regular file");
}

// (9) outputs are checked before the work that fills them, not after.
TEST(Hardening, UnwritableOutputsAreRefusedBeforeTheWork) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_usage_error("run gpt --ranks 1 --steps 3000 --save /nonexistent/x.safetensors",
                     "--save '/nonexistent/x.safetensors'");
  expect_usage_error("simulate --model 7b --dp 8 --tp 8 --pp 2 --trace /nonexistent/s.json",
                     "--trace '/nonexistent/s.json'");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

// (10) options with no effect in their configuration were accepted (exit 0).
TEST(Hardening, OptionsWithoutEffectAreRefused) {
  expect_usage_error("run ddp --ranks 2 --variant naive --micro-batches 2", "--micro-batches splits a step");
  expect_usage_error("run ddp --ranks 2 --variant flat --bucket-mb 1", "--bucket-mb sizes the buckets");
  expect_usage_error("run zero --ranks 2 --stage 0 --unit 2", "stage 0 (DDP) shards nothing");
  expect_usage_error("run zero --ranks 2 --unit 9", "--unit 9 is more layers than the model's --depth 6");
  expect_usage_error("run zero --ranks 2 --stage 3 --prefetch-depth 9", "at most 5 can be ahead");
  expect_usage_error("run zero --ranks 2 --stage 1 --prefetch on", "--prefetch and --prefetch-depth are stage 3's");
  // An injected fault that never fires: the run used to end "OK".
  expect_usage_error("run collectives --ranks 1 --inject-fault 0:0", "never fired: rank 0 made no sends");
  expect_usage_error("run collectives --ranks 4 --inject-fault 0:999999", "never fired: rank 0 made 48 sends");
  expect_usage_error("run collectives --ranks 4 --algo tree --collective broadcast --inject-fault 3:0",
                     "never fired: rank 3 made no sends");
}

// (11) the message quoted 4·hidden as if it were --hidden.
TEST(Hardening, MessagesQuoteWhatWasGiven) {
  expect_usage_error("run tensor_parallel --ranks 3", "4 × --hidden 64 = 256 is not divisible by 3");
}

// (12) --trace /dev/stdout wrote a regular file /dev/stdout.dtlt, and with --json mixed the
// trace into the report.
TEST(Hardening, ATraceOnStandardOutputHasNoCompanionAndNoJson) {
  const Output o = dtlab("run collectives --ranks 2 --bytes 1K --trace /dev/stdout");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\"traceEvents\""), std::string::npos);
  std::FILE* companion = std::fopen("/dev/stdout.dtlt", "rb");
  EXPECT_EQ(companion, nullptr) << "a /dev/stdout.dtlt was written";
  if (companion) std::fclose(companion);
  expect_usage_error("run collectives --ranks 2 --bytes 1K --trace /dev/stdout --json", "would mix the trace");
}

// (13) a checkpoint holding NaN weights trained into NaN and read "all checks passed".
TEST(Hardening, NanWeightsAreRefused) {
  const std::string good = temp_path("hardening_good.safetensors"), bad = temp_path("hardening_nan.safetensors");
  ASSERT_EQ(dtlab("run gpt --ranks 1 --steps 0 --save " + good).code, 0);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 8u);
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  ASSERT_LT(8 + header + 4, bytes.size());
  const std::uint32_t nan_bits = 0x7fc00000u;  // the first element of the first tensor
  std::memcpy(bytes.data() + 8 + header, &nan_bits, 4);
  std::ofstream(bad, std::ios::binary) << bytes;
  expect_usage_error("run gpt --ranks 1 --steps 0 --load " + bad, "holds NaN at element 0");
  std::remove(good.c_str());
  std::remove(bad.c_str());
}
