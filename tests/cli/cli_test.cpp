// The dtlab command as a user runs it: exit codes, JSON on stdout, traces, errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/cuda/device.h"
#include "labs/lab.h"
#include "tests/cli/cli_util.h"

using nlohmann::json;

namespace {
using Output = dtl::test::CliOutput;
Output dtlab(const std::string& args) { return dtl::test::run_dtlab(args); }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Cli, ListNamesTheCollectivesLab) {
  const Output o = dtlab("list");
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("collectives"), std::string::npos);
}

// `dtlab list --json`: what the exercise track's script reads (tests/grade/check_student_grader.sh),
// each lab's small run, options and exercises as the registry has them; the small run passes.
TEST(Cli, ListJsonGivesEveryLabsSmallRunOptionsAndExercises) {
  const Output o = dtlab("list --json");
  ASSERT_EQ(o.code, 0) << o.err;
  const json labs = json::parse(o.out);
  ASSERT_EQ(labs.size(), dtl::lab_registry().size());
  for (const dtl::LabInfo& lab : dtl::lab_registry()) {
    const auto it = std::find_if(labs.begin(), labs.end(), [&](const json& j) { return j["name"] == lab.name; });
    ASSERT_NE(it, labs.end()) << lab.name;
    EXPECT_EQ((*it)["small_run"].size(), 2 * lab.small_run.size()) << lab.name;
    EXPECT_EQ((*it)["options"].size(), lab.options.size()) << lab.name;
    ASSERT_EQ((*it)["exercises"].size(), lab.exercises.size()) << lab.name;
    for (std::size_t i = 0; i < lab.exercises.size(); ++i) EXPECT_EQ((*it)["exercises"][i]["id"], lab.exercises[i].id);
    std::string args = "run " + lab.name;
    for (const auto& word : (*it)["small_run"]) args += " " + word.get<std::string>();
    const Output run = dtlab(args);
    EXPECT_EQ(run.code, 0) << "dtlab " << args << "\n" << run.err;
  }
}

TEST(Cli, RunJsonPutsOnlyTheReportOnStdout) {
  const std::string trace = testing::TempDir() + "cli_ring_" + std::to_string(getpid()) + ".json";
  const Output o = dtlab("run collectives --algo ring --ranks 4 --bytes 64K --json --trace " + trace);
  ASSERT_EQ(o.code, 0) << o.err;
  const json r = json::parse(o.out);  // throws (fails the test) if anything else is on stdout
  EXPECT_EQ(r["lab"], "collectives");
  EXPECT_EQ(r["backend"], "threads");
  EXPECT_EQ(r["ranks"], 4);
  EXPECT_TRUE(r["ok"].get<bool>());
  bool found = false;
  for (const auto& row : r["rows"]) {
    for (const char* field : {"id", "label", "measured", "predicted", "unit", "source", "tolerance"})
      ASSERT_TRUE(row.contains(field)) << field << " missing in " << row.dump();
    if (row["id"] == "ring.bytes_sent_per_rank") {
      found = true;
      EXPECT_EQ(row["measured"].get<double>(), 2.0 * 3 / 4 * 65536);  // raw bytes, not KiB
      EXPECT_EQ(row["predicted"].get<double>(), 2.0 * 3 / 4 * 65536);
      EXPECT_EQ(row["unit"], "B");
      EXPECT_EQ(row["tolerance"].get<double>(), 0.0);
      EXPECT_EQ(row["source"], "2(P-1)/P·N");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_NO_THROW(json::parse(slurp(trace)));
}

TEST(Cli, BadInputIsUsageErrorTwo) {
  for (const char* args : {"run collectives --bytes -3",
                           "run collectives --bytes 12Q",
                           "run nolab",
                           "run collectives --algo butterfly",
                           "run collectives --ranks 0",
                           "run collectives --ranks 99999999",
                           "run collectives --frobnicate",
                           "bench nothing",
                           "bench all_reduce --impl ring -b 1M -e 1K",
                           "run collectives --inject-fault 9",
                           "run collectives --link carrier-pigeon",
                           "run collectives --link pcie4 --step",
                           "run ddp --slow-rank 4:2",
                           "run ddp --slow-rank 1",
                           "run ddp --slow-rank 1:0.5",
                           "run ddp --slow-rank x:2",
                           "bench-kernels --device cuda",
                           "bench-step --device cuda",
                           "bench-step --width 0",
                           "run ddp --width abc",
                           "run ddp --bucket-mb x",
                           "run ddp --steps 99999999999",
                           "run ddp --depth 2.5",
                           "run ddp --width 60000",
                           "bench-step --width 60000",
                           "bench-kernels --elements 8G",
                           "run collectives --bytes 4096G",
                           "bench all_reduce -b 4096G -e 4096G",
                           "run collectives --backend nccl --device cpu",
                           "run collectives --backend mpi --device cuda",
                           "bench all_reduce --backend mpi --device cuda",
                           "run ddp --device cuda",
                           "bench ping_pong --impl ring",
                           "bench ping_pong --ranks 1",
                           "bench ping_pong --device cuda",
                           "bench ping_pong --backend nccl",
                           "bench ping_pong --op max"}) {
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.err;
    EXPECT_NE(o.err.find("error"), std::string::npos) << args;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n') <= 2, true) << "not a short message: " << o.err;
  }
}

TEST(Cli, InjectedFaultExitsNonZeroAndStillWritesTheTrace) {
  const std::string trace = testing::TempDir() + "cli_fault_" + std::to_string(getpid()) + ".json";
  const Output o = dtlab("run collectives --ranks 4 --bytes 4K --inject-fault 2:1 --trace " + trace);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("rank 2 failed"), std::string::npos) << o.err;
  const json t = json::parse(slurp(trace));
  EXPECT_NE(t["otherData"]["error"].get<std::string>().find("rank 2"), std::string::npos);
}

TEST(Cli, InjectedHangIsExplainedByTheWatchdog) {
  const Output o = dtlab("run collectives --ranks 3 --bytes 4K --inject-hang 1 --timeout 1");
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("rank 1 waits nothing: it stopped sending on purpose"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("waits recv"), std::string::npos) << o.err;
}

// Issue 50: a deadlock answers in seconds, not at a minute. With no --timeout, thread ranks
// say after 2 s what each waits on ("still waiting:") and the watchdog ends the run in 8 s.
TEST(Cli, ADeadlockIsNamedWithinSecondsByDefault) {
  const auto start = std::chrono::steady_clock::now();
  const Output o = dtlab("run collectives --ranks 3 --bytes 4K --inject-hang 1");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_LT(seconds, 10.0) << "a deadlocked small run must end within 10 s";
  const std::size_t still = o.err.find("still waiting: no rank made progress for 2 s");
  ASSERT_NE(still, std::string::npos) << o.err;
  EXPECT_NE(o.err.find("rank 1 waits nothing: it stopped sending on purpose", still), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("no rank made progress for 8 s (--timeout)"), std::string::npos) << o.err;
  std::printf("deadlock named after 2 s, run ended in %.1f s\n", seconds);
}

TEST(Cli, StepPrintsEveryTransfer) {
  const Output o = dtlab("run collectives --algo ring --ranks 3 --bytes 48 --step < /dev/null");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("transfer 12:"), std::string::npos) << o.out;  // 2(P-1)·P transfers
  EXPECT_EQ(o.out.find("transfer 13:"), std::string::npos);
  EXPECT_NE(o.out.find("3*|  3*|  3*|"), std::string::npos);  // everything complete at the end
}

// --algo all steps four runs: each is named and starts from every rank holding its own data
// (the picture did not reset: the ring began where naive had left every chunk complete).
TEST(Cli, StepStartsEachAlgorithmsRunFromOwnData) {
  const Output o = dtlab("run collectives --algo all --ranks 3 --bytes 48 --step < /dev/null");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* run :
       {"run: naive all_reduce\n", "run: ring all_reduce\n", "run: tree all_reduce\n", "run: rhd all_reduce\n"}) {
    const std::size_t at = o.out.find(run);
    ASSERT_NE(at, std::string::npos) << run << o.out;
    const std::size_t first_picture_end = o.out.find("rank 2", at);
    ASSERT_NE(first_picture_end, std::string::npos);
    const std::string first = o.out.substr(at, first_picture_end - at + 30);
    EXPECT_EQ(first.find("3*"), std::string::npos) << "the first transfer of a run completes no chunk:\n" << first;
  }
}

TEST(Cli, BenchJsonHasTheNcclTestsFields) {
  const std::string path = testing::TempDir() + "bench_" + std::to_string(getpid()) + ".json";
  const Output o = dtlab("bench all_reduce --impl library --ranks 3 -b 1K -e 4K -f 2 -n 2 -w 1 --json " + path);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("#wrong"), std::string::npos);
  const json j = json::parse(slurp(path));
  for (const char* k : {"collective", "impl", "backend", "ranks", "dtype", "ceiling_busbw_GBps", "rows"})
    EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["rows"].size(), 6u);  // 3 sizes × (out-of-place, in-place)
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["wrong"].get<double>(), 0);
    EXPECT_GT(row["busbw_GBps"].get<double>(), 0);
  }
  for (const char* impl : {"ring", "ring_sliced", "tree", "double_tree", "rhd", "naive"}) {
    const Output b = dtlab(std::string("bench all_reduce --ranks 5 -b 100 -e 1000 -f 10 -n 1 -w 0 --impl ") + impl);
    EXPECT_EQ(b.code, 0) << impl << b.err;
  }
  // NCCL's channels (issue 51): each size checked against the exact sums (#wrong 0, exit 0).
  for (const char* impl : {"ring_sliced", "double_tree"}) {
    const Output b =
        dtlab(std::string("bench all_reduce --ranks 5 -b 100 -e 1000 -f 10 -n 1 -w 0 --channels 3 --impl ") + impl);
    EXPECT_EQ(b.code, 0) << impl << b.err;
    EXPECT_NE(b.out.find("#wrong total 0"), std::string::npos) << b.out;
  }
  for (const char* coll : {"reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all", "all_to_allv"}) {
    const Output b = dtlab(std::string("bench ") + coll + " --ranks 3 -b 96 -e 96 -n 1 -w 0");
    EXPECT_EQ(b.code, 0) << coll << b.err;
  }
}

// Issue 51: the ring's footer on thread ranks, at a size the memory ceiling applies to: the
// ring ceiling 2·BW/(5P) from the probe's best rate, and beside it what the probe's own kernels
// reach, 2 / (P·(3/triad + 2/copy)) from the JSON's rates (never above the ceiling).
TEST(Cli, BenchRingFooterHasTheCeilingAndTheKernelRates) {
  const std::string path = testing::TempDir() + "ring_footer_" + std::to_string(getpid()) + ".json";
  const Output o = dtlab("bench all_reduce --impl ring_sliced --ranks 4 -b 16M -e 16M -n 1 -w 0 --json " + path);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("# at the probe's own kernel rates"), std::string::npos) << o.out;
  const json j = json::parse(slurp(path));
  ASSERT_TRUE(j.contains("ring_ceiling")) << o.out;
  const json& m = j["memory_GBps"];
  const double best =
      std::max({m["read"].get<double>(), m["write"].get<double>(), m["copy"].get<double>(), m["triad"].get<double>()});
  const double kernels = 2.0 / (4 * (3.0 / m["triad"].get<double>() + 2.0 / m["copy"].get<double>()));
  EXPECT_NEAR(j["ring_ceiling"]["busbw_GBps"].get<double>(), 2 * best / 20, 1e-9);
  EXPECT_NEAR(j["ring_ceiling"]["kernel_rates_busbw_GBps"].get<double>(), kernels, 1e-9);
  EXPECT_LE(kernels, j["ring_ceiling"]["busbw_GBps"].get<double>());
}

// Issue 51: --algo auto prints NCCL's tuning model's table (nothing runs): a row per size with
// exactly one pick marked *, and why; a small all_reduce across nodes goes to a low-latency
// protocol (LL), a large one to the ring.
TEST(Cli, BenchAlgoAutoMarksTheModelsPickPerSize) {
  const Output o = dtlab("bench all_reduce --algo auto --gpu h100-sxm5 --ranks 16 --per-node 8 -b 8 -e 8G -f 1024");
  ASSERT_EQ(o.code, 0) << o.err;
  std::istringstream lines(o.out);
  std::string line, first, last;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++rows;
    EXPECT_EQ(std::count(line.begin(), line.end(), '*'), 1) << line;
    EXPECT_NE(line.find(", next "), std::string::npos) << "no reason given: " << line;
    if (first.empty()) first = line;
    last = line;
  }
  EXPECT_EQ(rows, 4) << o.out;  // 8 B, 8 KiB, 8 MiB, 8 GiB
  EXPECT_NE(first.find("/LL:"), std::string::npos) << first;
  EXPECT_NE(last.find("ring/"), std::string::npos) << last;
}

// all_to_allv with a hot rank (--skew 4 on 4 ranks): rank 0 receives 4/7 of what every rank
// sends, 3 · 4/7 · 4 MiB from the others against 3/4 · 4 MiB when even; on a 0.1 GB/s
// emulated link (the busier direction sets a rank's time, α 0) the step takes at least
// that hot rank's time, 16/7 of the even one. --skew on another collective is refused.
TEST(Cli, BenchAllToAllvShowsTheHotRanksCost) {
  auto seconds = [](const std::string& extra) {
    const std::string path = testing::TempDir() + "a2av_" + std::to_string(getpid()) + ".json";
    const Output o = dtlab("bench all_to_allv --ranks 4 -b 4M -e 4M -n 2 -w 1 --link-bw 0.1 --link-latency 0 --json " +
                           path + extra);
    EXPECT_EQ(o.code, 0) << o.err;
    const json j = json::parse(slurp(path));
    EXPECT_EQ(j["rows"][0]["wrong"].get<double>(), 0);
    return j["rows"][0]["time_us"].get<double>() * 1e-6;
  };
  const double mib4 = 4.0 * 1024 * 1024, even = seconds(""), hot = seconds(" --skew 4");
  const double even_floor = 0.75 * mib4 / 0.1e9, hot_floor = 3.0 * 4 / 7 * mib4 / 0.1e9;
  EXPECT_GE(even, even_floor) << "even " << even << " s";
  EXPECT_GE(hot, hot_floor) << "hot " << hot << " s";
  EXPECT_GT(hot / even, 1.5) << "hot " << hot << " s, even " << even << " s (16/7 by the model)";
  const Output refused = dtlab("bench all_to_all --ranks 4 -b 64 -e 64 --skew 2");
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--skew"), std::string::npos) << refused.err;
}

// The point-to-point sweep the α–β fit needs: one way = round trip / 2, data checked,
// nccl-tests' row fields; ranks beyond 0 and 1 only wait; on an emulated link a message
// takes at least its α + N·β.
TEST(Cli, BenchPingPongTimesOneWayAndChecksTheData) {
  const std::string path = testing::TempDir() + "ping_pong_" + std::to_string(getpid()) + ".json";
  const Output o = dtlab("bench ping_pong -b 1K -e 64K -f 8 -n 3 -w 1 --json " + path);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("one-way"), std::string::npos) << o.out;
  const json j = json::parse(slurp(path));
  EXPECT_EQ(j["collective"], "ping_pong");
  EXPECT_EQ(j["ranks"], 2);         // the default for ping_pong
  ASSERT_EQ(j["rows"].size(), 3u);  // 1K, 8K, 64K
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["wrong"].get<double>(), 0);
    EXPECT_NEAR(row["time_us"].get<double>() * 2, row["round_trip_us"].get<double>(), 1e-6);
    EXPECT_FALSE(row["inplace"].get<bool>());
  }
  EXPECT_EQ(dtlab("bench ping_pong --ranks 3 -b 4K -e 4K -n 2 -w 0").code, 0);
  const Output link = dtlab("bench ping_pong -b 64K -e 64K -n 2 -w 0 --link-bw 1 --link-latency 100 --json " + path);
  ASSERT_EQ(link.code, 0) << link.err;
  const json l = json::parse(slurp(path));
  EXPECT_GE(l["rows"][0]["time_us"].get<double>(), 100 + 65.536) << link.out;  // α + N/β at least
  EXPECT_EQ(l["link"]["latency_us"], 100);
}

// bench-kernels runs every kernel and reports each rate beside a positive ceiling.
TEST(Cli, BenchKernelsReportsEveryKernelAgainstItsCeiling) {
  const std::string path = testing::TempDir() + "kernels_" + std::to_string(getpid()) + ".json";
  const Output o = dtlab("bench-kernels --batch 8 --width 64 --elements 64K --repeats 1 --json " + path);
  ASSERT_EQ(o.code, 0) << o.err;
  const json j = json::parse(slurp(path));
  EXPECT_GT(j["gemm_ceiling_GFLOPs"].get<double>(), 0);
  EXPECT_GT(j["memory_GBps"].get<double>(), 0);
  ASSERT_GE(j["kernels"].size(), 10u);
  for (const auto& k : j["kernels"]) {
    EXPECT_GT(k["rate"].get<double>(), 0) << k["kernel"];
    EXPECT_GT(k["ceiling"].get<double>(), 0) << k["kernel"];
  }
  EXPECT_EQ(dtlab("bench-kernels --elements 12").code, 2);
}

// Started as one of several processes (mpirun, srun, torchrun) with --backend threads:
// each process would run every rank by itself. A usage error says what to add.
TEST(Cli, ThreadsBackendUnderALauncherIsAUsageError) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_STEP_NUM_TASKS", "4", 1);  // srun -n 4
  const Output o = dtlab("run collectives --bytes 1K");
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("--backend mpi"), std::string::npos) << o.err;
}

// --device cuda on a machine without a GPU (or a build without CUDA): exit 2 and a message
// that says why and what to use instead, never a crash.
TEST(Cli, DeviceCudaWithoutAGpuIsAClearUsageError) {
  if (dtl::cuda::probe_devices().count > 0)
    GTEST_SKIP() << "this machine has a GPU (tests/gpu covers --device cuda there)";
  for (const char* args : {"run collectives --bytes 1K --device cuda", "bench all_reduce --device cuda -b 1K -e 1K"}) {
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.err;
    EXPECT_NE(o.err.find("--device cpu"), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  // NCCL needs GPUs too; the message points to the backends that do not.
  for (const char* args : {"run collectives --backend nccl", "bench all_reduce --backend nccl -b 1K -e 1K"}) {
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.err;
    EXPECT_NE(o.err.find("--backend threads"), std::string::npos) << o.err;
  }
}

// bench-step on the CPU prints the step time and the achieved rate, machine-readably.
TEST(Cli, BenchStepPrintsStepTimeAndRate) {
  const Output o = dtlab("bench-step --width 64 --depth 3 --batch 32 --steps 2 --warmup 1");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("step_ms "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("achieved_TFLOPs "), std::string::npos) << o.out;
}

// --profile-ops: the GPT's per-op table. Its calls per step are the model's own count (L
// layers: 4L + 1 linear layers with the tied head, L of them fused with their GELU on one
// rank, 2L + 1 LayerNorms, L attentions, L residual adds in one pass), and the ops' times
// add up to the step's, less what runs outside the ops (the row that says so).
TEST(Cli, BenchStepProfilesTheGptsOps) {
  const Output o = dtlab(
      "bench-step --model gpt --layers 3 --hidden 32 --heads 2 --seq 16 --batch 2 --vocab 64 "
      "--steps 2 --warmup 1 --profile-ops");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto calls = [&](const std::string& op) {
    const std::size_t at = o.out.find("\n" + op + " ");
    if (at == std::string::npos) return -1.0;
    return std::stod(o.out.substr(at + op.size() + 2));
  };
  EXPECT_EQ(calls("linear_forward"), 3 * 3 + 1) << o.out;
  EXPECT_EQ(calls("linear_gelu_forward"), 3) << o.out;
  EXPECT_EQ(calls("gelu_forward"), -1) << o.out;  // no unfused GELU left on one rank
  EXPECT_EQ(calls("residual_add"), 3) << o.out;
  EXPECT_EQ(calls("linear_backward"), 4 * 3 + 1) << o.out;
  EXPECT_EQ(calls("layernorm_forward"), 2 * 3 + 1) << o.out;
  EXPECT_EQ(calls("attention_backward"), 3) << o.out;
  EXPECT_EQ(calls("adamw_step"), 1) << o.out;
  EXPECT_NE(o.out.find("(outside the ops)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ceilings measured now (OpenBLAS "), std::string::npos) << o.out;
  for (const char* misuse : {"bench-step --profile-ops", "bench-step --model gpt --device cuda --profile-ops",
                             "bench-step --device cuda --threads 2"}) {
    const Output bad = dtlab(misuse);
    EXPECT_EQ(bad.code, 2) << misuse << "\n" << bad.err;
  }
}

// Issue 14: sizes below one element (one element per rank for all_gather, reduce_scatter,
// all_to_all) crashed or wrote past the buffers. -e below the smallest valid size is a
// usage error naming that size; other sizes are rounded to a multiple of it, and the
// table's footer says so.
TEST(Cli, BenchSizesBelowOneElementPerRankAreUsageErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"bench all_reduce -b 1 -e 1 -n 1 -w 0", "smallest valid size is 4 B"},
      {"bench all_reduce --impl ring --ranks 3 -b 2 -e 2 -n 1 -w 0", "smallest valid size is 4 B"},
      {"bench all_gather --ranks 4 -b 4 -e 4 -n 1 -w 0", "smallest valid size is 16 B"},
      {"bench reduce_scatter --ranks 3 -b 8 -e 8 -n 1 -w 0 --dtype f64", "smallest valid size is 24 B"},
      {"bench all_to_all --ranks 5 -b 1 -e 19 -n 1 -w 0", "smallest valid size is 20 B"},
  };
  for (const auto& [args, expected] : cases) {
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(expected), std::string::npos) << args << ": expected '" << expected << "' in\n" << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": not a one-line message:\n" << o.err;
  }
}

TEST(Cli, BenchRoundsSizesToWholeElementsPerRankAndSaysSo) {
  const std::string path = testing::TempDir() + "bench_rounded_" + std::to_string(getpid()) + ".json";
  // 3 ranks × f32 = 12 B: -b 10 runs as 12, 30 as 24, 90 as 84.
  const Output o = dtlab("bench all_gather --ranks 3 -b 10 -e 100 -f 3 -n 1 -w 0 --json " + path);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("# note: sizes rounded to a multiple of 12 B"), std::string::npos) << o.out;
  const json j = json::parse(slurp(path));
  std::vector<std::uint64_t> bytes;
  for (const auto& row : j["rows"]) bytes.push_back(row["bytes"].get<std::uint64_t>());
  const std::vector<std::uint64_t> expected = {12, 12, 24, 24, 84, 84};  // out-of-place and in-place per size
  EXPECT_EQ(bytes, expected);
  // Sizes that need no rounding get no note.
  const Output exact = dtlab("bench all_gather --ranks 3 -b 12 -e 48 -f 2 -n 1 -w 0");
  ASSERT_EQ(exact.code, 0) << exact.err;
  EXPECT_EQ(exact.out.find("rounded"), std::string::npos) << exact.out;
}

// Issue 14: -f 1.0000001 swept millions of sizes; nan and inf slipped through the -f > 1
// check. Each bad sweep is a one-line usage error naming the argument.
TEST(Cli, BenchRejectsBadSweeps) {
  const std::pair<const char*, const char*> cases[] = {
      {"bench all_reduce -b 1K -e 2K -f 1.0000001", "would be 693147"},
      {"bench all_reduce -b 1K -e 2K -f 1.0000001", "1000"},
      {"bench all_reduce -b 1K -e 2K -f 1", "-f"},
      {"bench all_reduce -b 1K -e 2K -f 0.5", "-f"},
      {"bench all_reduce -b 1K -e 2K -f nan", "-f"},
      {"bench all_reduce -b 1K -e 1K -f nan", "-f"},
      {"bench all_reduce -b 1K -e 2K -f inf", "-f"},
      {"bench all_reduce -b 1K -e 1K -n -1", "--iters"},  // -n's long name
      {"bench all_reduce -b 1K -e 1K -n 0", "--iters"},
      {"bench all_reduce -b 1K -e 1K -w -1", "--warmup_iters"},
      {"bench all_gather --ranks 4 -b 1K -e 8G", "memory"},
  };
  for (const auto& [args, expected] : cases) {
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(expected), std::string::npos) << args << ": expected '" << expected << "' in\n" << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": not a one-line message:\n" << o.err;
  }
  // One size needs no factor.
  const Output one = dtlab("bench all_reduce -b 1K -e 1K -f 1 -n 1 -w 0");
  EXPECT_EQ(one.code, 0) << one.err;
}

// Issue 14: output that never reached a full disk is an error, not exit 0 — on standard
// output (checked when the command has returned) and in the files dtlab writes.
TEST(Cli, WritingToAFullDiskIsAnError) {
  for (const char* args : {"list >/dev/full", "run collectives --ranks 2 --bytes 1K >/dev/full",
                           "run collectives --ranks 2 --bytes 1K --json >/dev/full",
                           "bench all_reduce --ranks 2 -b 1K -e 1K -n 1 -w 0 --json - >/dev/full",
                           "bench all_reduce --ranks 2 -b 1K -e 4K -n 1 -w 0 >/dev/full",  // fails in rank 0's thread
                           "bench-kernels --batch 8 --width 64 --elements 64K --repeats 1 >/dev/full"}) {  // printf
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 1) << args << "\n" << o.err;
    const std::string expected = "dtlab: error writing standard output: No space left on device\n";
    EXPECT_TRUE(o.err.size() >= expected.size() && o.err.substr(o.err.size() - expected.size()) == expected)
        << args << ": stderr should end with '" << expected << "', it is:\n"
        << o.err;
  }
  for (const char* args :
       {"bench all_reduce --ranks 2 -b 1K -e 1K -n 1 -w 0 --json /dev/full",
        "bench-kernels --batch 8 --width 64 --elements 64K --repeats 1 --json /dev/full",
        "grade --exercise all_reduce_cost --json /dev/full", "run collectives --ranks 2 --bytes 1K --trace /dev/full",
        "bench all_reduce --ranks 2 -b 1K -e 1K -n 1 -w 0 --trace /dev/full"}) {
    const Output o = dtlab(args);
    EXPECT_EQ(o.code, 1) << args << "\n" << o.err;
    EXPECT_NE(o.err.find("'/dev/full'"), std::string::npos) << args << ": the message names the file:\n" << o.err;
    EXPECT_NE(o.err.find("No space left on device"), std::string::npos) << args << "\n" << o.err;
  }
}

// Issue 31 (2): thread ranks the process cannot hold. Refused before any thread starts,
// with the most that fit (the runner used to die in std::terminate when the system would
// not make a thread: `ulimit -v 4000000; dtlab run collectives --ranks 128`).
TEST(Cli, MoreThreadRanksThanTheProcessCanHoldIsAUsageError) {
  const auto limited = [](const std::string& limit, const std::string& args) {
    return dtl::test::run_dtlab_shell("bash -c '" + limit + "; exec " + std::string(DTLAB_EXE) + " " + args + "'");
  };
  // A thread-count limit (ulimit -u): 1000 ranks are 2000 threads.
  const Output u = limited("ulimit -S -u 1000", "run collectives --ranks 1000 --bytes 4 --iters 1");
  EXPECT_EQ(u.code, 2) << u.err;
  EXPECT_NE(u.err.find("more than this user's limit of 1000 (ulimit -u); use --ranks"), std::string::npos) << u.err;
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no ulimit -v here";
#else
  // An address-space limit (ulimit -v): the stacks must fit; the message gives the most that do.
  const Output v = limited("ulimit -S -v 3000000", "run collectives --ranks 256 --bytes 4 --iters 1");
  EXPECT_EQ(v.code, 2) << v.err;
  EXPECT_NE(v.err.find("leaves room for about"), std::string::npos) << v.err;
  const auto at = v.err.find("use --ranks ");
  ASSERT_NE(at, std::string::npos) << v.err;
  const int fit = std::atoi(v.err.c_str() + at + 12);
  EXPECT_GT(fit, 0) << v.err;
  const Output ok =
      limited("ulimit -S -v 3000000",  // (a long --timeout: hundreds of threads on loaded cores start slowly)
              "run collectives --ranks " + std::to_string(fit) + " --bytes 4 --iters 1 --timeout 120");
  EXPECT_EQ(ok.code, 0) << "the figure it gave does not run: " << ok.err;
#endif
}
