// The run analysis of torch.profiler traces (core/trace/run_breakdown.h) on small crafted
// traces whose every figure is worked out by hand in the comments.
#include "core/trace/run_breakdown.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/trace/torch_profile.h"

namespace dtl {
namespace {

struct S {
  const char* name;
  int tid;
  double ts, dur;  // microseconds, as torch writes them
  const char* cat = nullptr;
};

// torch 1.13's legacy layout: a bare array, pid "CPU functions", no categories.
std::string legacy(const std::vector<S>& spans) {
  std::string out = "[";
  for (const S& s : spans) {
    if (out.size() > 1) out += ", ";
    out += "{\"name\": \"" + std::string(s.name) + "\", \"ph\": \"X\", \"ts\": " + std::to_string(s.ts) +
           ", \"dur\": " + std::to_string(s.dur) + ", \"tid\": " + std::to_string(s.tid) +
           ", \"pid\": \"CPU functions\", \"args\": {}}";
  }
  return out + "]";
}

// Kineto's layout: an object with categories and distributedInfo.
std::string kineto(int rank, int world, const std::vector<S>& spans) {
  std::string out =
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
      ", \"world_size\": " + std::to_string(world) + "}, \"traceEvents\": [";
  bool first = true;
  for (const S& s : spans) {
    out += std::string(first ? "" : ", ") + "{\"ph\": \"X\", \"cat\": \"" + s.cat + "\", \"name\": \"" + s.name +
           "\", \"pid\": 0, \"tid\": " + std::to_string(s.tid) + ", \"ts\": " + std::to_string(s.ts) +
           ", \"dur\": " + std::to_string(s.dur) + "}";
    first = false;
  }
  return out + "]}";
}

// Rank 0 of a two-rank DDP step (µs). Main thread 1: a matmul [0,20], a backward node
// [18,25] that launches the all-reduce (c10d::allreduce_ [20,22]), the optimizer's add
// [90,100] and a last op [119,120]; gloo's thread 2 runs the all-reduce [22,90], waiting for
// rank 1. Annotated, ProfilerStep#0 and train_step [0,120] hold it all.
//   compute = [0,25] U [90,100] U [119,120] = 36; communication = [20,90] = 70;
//   overlapped = [20,25] = 5; exposed = 65; window = 120; idle = 120 - 36 - 65 = 19.
std::vector<S> rank0_spans(bool annotated) {
  std::vector<S> s = {{"aten::mm", 1, 0, 20},         {"autograd::engine::evaluate_function: MmBackward0", 1, 18, 7},
                      {"c10d::allreduce_", 1, 20, 2}, {"gloo:all_reduce", 2, 22, 68},
                      {"aten::add_", 1, 90, 10},      {"aten::zeros", 1, 119, 1}};
  if (annotated) s.insert(s.begin(), {{"ProfilerStep#0", 1, 0, 120}, {"train_step", 1, 0, 120}});
  return s;
}

// Rank 1, whose profiler clock reads 1000 µs more: a long matmul [1000,1080], the launch
// inside a backward node [1078,1085], gloo's all-reduce [1082,1090], the add [1090,1100],
// the last op [1119,1120].
//   compute = [1000,1085] U [1090,1100] U [1119,1120] = 96; communication = [1080,1090] = 10;
//   overlapped = [1080,1085] = 5; exposed = 5; window 120; idle = 120 - 96 - 5 = 19.
// Clocks: the all-reduce ends at 90 on rank 0 and 1090 here: offset -1000 µs. Aligned, rank 1
// starts it at 82, rank 0 at 22: rank 0 waited min(82 - 22, 68) = 60 µs for rank 1.
std::vector<S> rank1_spans(bool annotated) {
  std::vector<S> s = {
      {"aten::mm", 1, 1000, 80},        {"autograd::engine::evaluate_function: MmBackward0", 1, 1078, 7},
      {"c10d::allreduce_", 1, 1080, 2}, {"gloo:all_reduce", 3, 1082, 8},
      {"aten::add_", 1, 1090, 10},      {"aten::zeros", 1, 1119, 1}};
  if (annotated) s.insert(s.begin(), {{"ProfilerStep#0", 1, 1000, 120}, {"train_step", 1, 1000, 120}});
  return s;
}

std::vector<TorchProfile> two_ranks(bool annotated) {
  return {parse_torch_profile(legacy(rank0_spans(annotated))), parse_torch_profile(legacy(rank1_spans(annotated)))};
}

void expect_ms(double measured_s, double expected_us, const char* what) {
  EXPECT_NEAR(measured_s * 1e6, expected_us, 1e-6)
      << what << ": difference " << measured_s * 1e6 - expected_us << " us";
}

TEST(RunBreakdown, ContainersAreNotComputeAndFiguresMatchTheHandWorkedOnes) {
  for (bool annotated : {false, true}) {
    std::vector<TorchProfile> p = two_ranks(annotated);
    const RunBreakdown run = analyze_run(p);
    ASSERT_EQ(run.ranks.size(), 2u);
    const RankBreakdown &r0 = run.ranks[0], &r1 = run.ranks[1];
    SCOPED_TRACE(annotated ? "annotated" : "plain");
    expect_ms(r0.compute_s, 36, "rank 0 compute");
    expect_ms(r0.comm_s, 70, "rank 0 communication");
    expect_ms(r0.overlapped_s, 5, "rank 0 overlapped");
    expect_ms(r0.exposed_s, 65, "rank 0 exposed");
    expect_ms(r0.idle_s, 19, "rank 0 idle");
    expect_ms(r1.compute_s, 96, "rank 1 compute");
    expect_ms(r1.exposed_s, 5, "rank 1 exposed");
    expect_ms(r1.idle_s, 19, "rank 1 idle");
    EXPECT_EQ(r1.offset_ns, -1'000'000);
    EXPECT_EQ(run.collectives, 1);
    expect_ms(r0.waited_s, 60, "rank 0 waited");
    expect_ms(r1.waited_s, 0, "rank 1 waited");
    EXPECT_EQ(r1.arrived_last, 1);
    EXPECT_EQ(run.slowest_rank, 1);
    expect_ms(r1.others_waited_s, 60, "the others' wait for rank 1");
    expect_ms(run.end_spread_s, 0, "the aligned ends' spread");
  }
}

// Clocks: rank 1's three all-reduces end at 1010, 1030 and 1060 µs on its clock, rank 0's at
// 10, 30 and 50: shifts -1000, -1000, -1010, median -1000 µs; aligned, the third ends 10 µs
// apart (the residue the run reports).
TEST(RunBreakdown, ClocksShiftByTheMedianOfTheCollectivesEnds) {
  std::vector<TorchProfile> p = {
      parse_torch_profile(
          legacy({{"gloo:all_reduce", 2, 0, 10}, {"gloo:all_reduce", 2, 20, 10}, {"gloo:all_reduce", 2, 40, 10}})),
      parse_torch_profile(legacy(
          {{"gloo:all_reduce", 2, 1000, 10}, {"gloo:all_reduce", 2, 1020, 10}, {"gloo:all_reduce", 2, 1040, 20}}))};
  const RunBreakdown run = analyze_run(p);
  EXPECT_EQ(run.ranks[1].offset_ns, -1'000'000);
  expect_ms(run.end_spread_s, 10, "the aligned ends' spread");
}

TEST(RunBreakdown, LegacyRolesComeFromTheOperatorNamespace) {
  EXPECT_EQ(profile_role("", "aten::addmm"), ProfileRole::operation);
  EXPECT_EQ(profile_role("", "autograd::engine::evaluate_function: AddmmBackward0"), ProfileRole::operation);
  EXPECT_EQ(profile_role("", "train_step"), ProfileRole::container);
  EXPECT_EQ(profile_role("", "ProfilerStep#3"), ProfileRole::container);
  EXPECT_EQ(profile_role("", "DistributedDataParallel.forward"), ProfileRole::container);
  EXPECT_EQ(profile_role("", "gloo:all_reduce"), ProfileRole::communication);
  EXPECT_EQ(profile_role("", "c10d::allreduce_"), ProfileRole::communication);
  EXPECT_EQ(profile_role("", "aten::broadcast_tensors"), ProfileRole::operation);  // not a collective
  EXPECT_EQ(profile_role("user_annotation", "my::step"), ProfileRole::container);
  EXPECT_EQ(profile_role("cpu_op", "ProfilerStep#0"), ProfileRole::container);
  EXPECT_EQ(profile_role("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float"), ProfileRole::communication);
}

// Kineto traces with GPU streams: the streams decide, the CPU's ops do not count. Rank 1's
// file comes first; distributedInfo orders them. Per rank, stream 7 runs a GEMM [0,50] and
// NCCL's stream 20 an all-reduce; rank 0's [40,100], rank 1's [70,100] (it is late).
//   rank 0: compute 50, communication 60, overlapped [40,50] = 10, exposed 50, window 100,
//           idle 0; rank 1: compute 50, communication 30, exposed 30, idle [50,70] = 20.
TEST(RunBreakdown, GpuStreamsDecideInKinetoTraces) {
  auto spans = [](double comm_start) {
    return std::vector<S>{{"ProfilerStep#0", 1, 0, 100, "user_annotation"},
                          {"aten::mm", 1, 0, 2, "cpu_op"},
                          {"volta_sgemm_128x64_nn", 7, 0, 50, "kernel"},
                          {"ncclKernel_AllReduce_RING_LL_Sum_float", 20, comm_start, 100 - comm_start, "kernel"}};
  };
  std::vector<TorchProfile> p = {parse_torch_profile(kineto(1, 2, spans(70))),
                                 parse_torch_profile(kineto(0, 2, spans(40)))};
  const RunBreakdown run = analyze_run(p);
  ASSERT_TRUE(run.device_streams);
  expect_ms(run.ranks[0].compute_s, 50, "rank 0 compute");
  expect_ms(run.ranks[0].exposed_s, 50, "rank 0 exposed");
  expect_ms(run.ranks[0].idle_s, 0, "rank 0 idle");
  expect_ms(run.ranks[1].exposed_s, 30, "rank 1 exposed");
  expect_ms(run.ranks[1].idle_s, 20, "rank 1 idle");
  expect_ms(run.ranks[0].waited_s, 30, "rank 0 waited");
  EXPECT_EQ(run.slowest_rank, 1);
}

TEST(RunBreakdown, TracesThatAreNotOneRunAreRefused) {
  auto one_of_two = [] { return parse_torch_profile(kineto(0, 2, {{"gloo:all_reduce", 2, 0, 5, "cpu_op"}})); };
  std::vector<TorchProfile> alone = {one_of_two()};
  EXPECT_THROW(analyze_run(alone), UsageError);
  // The viewer shows one rank alone (whole_run false), under its own number.
  std::vector<TorchProfile> rank1 = {parse_torch_profile(kineto(1, 2, {{"gloo:all_reduce", 2, 0, 5, "cpu_op"}}))};
  EXPECT_EQ(analyze_run(rank1, false).ranks.at(0).rank, 1);
  std::vector<TorchProfile> twice = {one_of_two(), one_of_two()};
  EXPECT_THROW(analyze_run(twice), UsageError);
  std::vector<S> extra = rank1_spans(false);
  extra.push_back({"gloo:all_reduce", 3, 1100, 5});
  std::vector<TorchProfile> mixed = {parse_torch_profile(legacy(rank0_spans(false))),
                                     parse_torch_profile(legacy(extra))};
  EXPECT_THROW(analyze_run(mixed), UsageError);
  std::vector<TorchProfile> none;
  EXPECT_THROW(analyze_run(none), UsageError);
}

TEST(RunBreakdown, FilesAndFoldersAreCheckedBeforeTheyAreRead) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dtl_run_breakdown_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "rank10.json") << legacy(rank1_spans(false));
  std::ofstream(dir / "rank2.json") << legacy(rank0_spans(false));
  std::ofstream(dir / "run.json") << "{\"ranks\": 2}";  // notes beside the traces: skipped
  const std::vector<std::string> files = torch_trace_files({dir.string()});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(std::filesystem::path(files[0]).filename(), "rank2.json");  // by number, not by text
  EXPECT_THROW(load_torch_profile((dir / "run.json").string()), UsageError);
  EXPECT_THROW(torch_trace_files({(dir / "missing.json").string()}), UsageError);
  std::filesystem::create_directories(dir / "empty");
  EXPECT_THROW(torch_trace_files({(dir / "empty").string()}), UsageError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dtl
