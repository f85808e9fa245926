// torch.profiler traces in the visualizer's model (viz/model/torch_trace.h) and the
// overlap figures (comm_overlap.h): crafted traces with hand-computed answers, and a trace
// bench/torch_ddp.py recorded (PyTorch DDP over gloo, 2 ranks, rank 0 profiled).
#include "viz/model/torch_trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/trace/run_breakdown.h"
#include "viz/model/comm_overlap.h"

using namespace dtl::viz;

namespace {
std::string span(const char* name, int tid, int ts, int dur) {
  return std::string(R"({"name": ")") + name + R"(", "ph": "X", "ts": )" + std::to_string(ts) + R"(, "dur": )" +
         std::to_string(dur) + R"(, "tid": )" + std::to_string(tid) + R"(, "pid": "CPU functions", "args": {}})";
}
}  // namespace

// The legacy layout: one process, the main thread computes, gloo's worker communicates.
// DistributedDataParallel.forward is a record_function span, a container: a mark, not work.
TEST(TorchTrace, LegacyLayoutOutermostSpansAndLanes) {
  const std::string json = "[" + span("DistributedDataParallel.forward", 1, 0, 100) + "," +
                           span("aten::addmm", 1, 10, 40) + "," +
                           span("autograd::engine::evaluate_function: AddmmBackward0", 1, 100, 200) + "," +
                           span("gloo:all_reduce", 2, 250, 150) + "," + span("gloo:all_reduce", 2, 260, 10) + "]";
  ASSERT_TRUE(looks_like_torch_trace(json));
  const TraceData t = parse_torch_trace(json);
  EXPECT_EQ(t.ranks, 1);
  ASSERT_EQ(t.events.size(), 4u);  // the nested all-reduce is inside the outer one
  EXPECT_EQ(t.events[0].kind, dtl::EventKind::mark);
  EXPECT_EQ(t.label(t.events[0].label), "DistributedDataParallel.forward");
  EXPECT_EQ(t.events[3].kind, dtl::EventKind::collective);
  EXPECT_EQ(t.events[3].stream, dtl::kStreamComm);
  EXPECT_EQ(t.label(t.events[3].label), "gloo:all_reduce");
  EXPECT_EQ(t.events[1].kind, dtl::EventKind::compute);
  const RankOverlap o = comm_overlap(t).at(0);
  EXPECT_DOUBLE_EQ(o.compute_s, 240e-6);  // 10..50 and 100..300
  EXPECT_DOUBLE_EQ(o.comm_s, 150e-6);
  EXPECT_DOUBLE_EQ(o.overlapped_s, 50e-6);  // 250..300
  EXPECT_DOUBLE_EQ(o.exposed_s, 100e-6);
}

// Two ranks' files of one run opened together: a lane group per rank, rank 1's clock
// (which reads 1000 µs more) moved so that the all-reduce ends together (run_breakdown.h).
TEST(TorchTrace, TheRanksOfOneRunOpenTogetherAligned) {
  const std::string dir = ::testing::TempDir() + "torch_run_two_ranks";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/rank0.json") << "[" + span("aten::mm", 1, 0, 20) + "," + span("gloo:all_reduce", 2, 22, 68) +
                                            "," + span("train_step", 1, 0, 100) + "]";
  std::ofstream(dir + "/rank1.json") << "[" + span("aten::mm", 1, 1000, 80) + "," +
                                            span("gloo:all_reduce", 3, 1082, 8) + "]";
  const std::vector<std::string> args = {dir};
  ASSERT_TRUE(is_torch_run(args));
  const TraceData t = load_torch_run_trace(args);
  EXPECT_EQ(t.ranks, 2);
  std::int64_t end[2] = {-1, -1};
  for (const dtl::Event& e : t.events)
    if (e.kind == dtl::EventKind::collective) end[e.rank] = e.end_ns;
  EXPECT_EQ(end[0], 90'000);
  EXPECT_EQ(end[1], 90'000);  // 1090 µs on its own clock
  // --overlap prints the run analysis, the very text of `dtlab analyze` (core/trace/run_breakdown.h).
  std::vector<dtl::TorchProfile> profiles = dtl::load_torch_run(args);
  EXPECT_EQ(describe_overlap_of(args), dtl::describe_run(dtl::analyze_run(profiles)));
  std::filesystem::remove_all(dir);
}

TEST(TorchTrace, KinetoLayoutTakesItsRankFromDistributedInfo) {
  const std::string json = R"({"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": 1, "world_size": 2},
    "traceEvents": [)" + span("aten::mm", 7, 5, 10) +
                           "]}";
  ASSERT_TRUE(looks_like_torch_trace(json));
  const TraceData t = parse_torch_trace(json);
  EXPECT_EQ(t.ranks, 2);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].rank, 1);
  EXPECT_EQ(t.meta.at("source"), "torch.profiler");
}

TEST(TorchTrace, DtlabTracesAreNotMistakenForTorch) {
  EXPECT_FALSE(looks_like_torch_trace(R"({"otherData": {"lab": "ddp"}, "traceEvents": [)"));
  EXPECT_THROW(parse_torch_trace("[" + span("x", 1, 0, -5) + "]"), dtl::Error);  // negative duration
  EXPECT_THROW(parse_torch_trace("[{"), dtl::Error);
}

// Issue 31 (7): a file shorter than the 4096 bytes read to recognize it was refused as
// "not valid JSON" (the stream's end-of-file state kept the seek back from working).
TEST(TorchTrace, AShortFileLoads) {
  const std::string json = "[" + span("aten::mm", 1, 0, 100) + "," + span("gloo:all_reduce", 2, 50, 20) + "]";
  ASSERT_LT(json.size(), 4096u);
  const std::string path = ::testing::TempDir() + "short_torch_trace.json";
  { std::ofstream(path) << json; }
  const TraceData t = load_trace(path);
  EXPECT_EQ(t.meta.at("source"), "torch.profiler");
  EXPECT_EQ(t.events.size(), 2u);
  std::remove(path.c_str());
}

TEST(TorchTrace, RecordedPytorchDdpRun) {
  const TraceData t = load_trace(std::string(DTL_SOURCE_DIR) + "/tests/viz/data/torch_ddp_trace.json");
  EXPECT_EQ(t.ranks, 1);
  int collectives = 0;
  for (const dtl::Event& e : t.events) collectives += e.kind == dtl::EventKind::collective;
  EXPECT_GT(collectives, 0);
  const RankOverlap o = comm_overlap(t).at(0);
  EXPECT_GT(o.compute_s, 0);
  EXPECT_GT(o.comm_s, 0);
  EXPECT_LE(o.overlapped_s, o.comm_s);
  EXPECT_NEAR(o.overlapped_s + o.exposed_s, o.comm_s, 1e-12);
  std::cout << describe_overlap(comm_overlap(t));
}
