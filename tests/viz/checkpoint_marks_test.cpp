// The timeline's checkpoint marks (viz/model/checkpoint_marks.h) come from the events the labs
// record (labs/train/checkpoint_run.cpp): crafted events give exactly their spans, steps and the
// time a write ran beside training; a zero-lab run that saves synchronously, asynchronously and
// then resumes gives one save per checkpoint (two halves when asynchronous), its file's write
// inside the save (synchronous) or between the save's start and its finish (asynchronous), and
// the resumed run's read of its checkpoint, at its step, before every save of that run.
#include "viz/model/checkpoint_marks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/trace/trace.h"
#include "tests/labs/lab_test_util.h"
#include "viz/model/trace_data.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

void span(Trace& t, int rank, std::uint16_t label, std::int64_t b, std::int64_t e, int step) {
  t.record(Event{.begin_ns = b, .end_ns = e, .rank = rank, .step = step, .label = label, .kind = EventKind::phase});
}

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("dtl_marks_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

// The zero lab, stage 3 on 2 ranks, 6 steps (1 warm-up + 5 runs of 1), with `extra`; its trace's marks.
std::vector<CheckpointMark> zero_marks(std::map<std::string, std::string> extra) {
  Trace trace(2);
  LabConfig cfg;
  cfg.ranks = 2;
  cfg.options = {{"stage", "3"}, {"width", "32"}, {"depth", "2"}, {"batch", "8"}, {"steps", "1"}};
  for (const auto& [k, v] : extra) cfg.options.set(k, v);
  test::run_lab("zero", cfg, trace);
  return checkpoint_marks(from_trace(trace));
}

std::vector<CheckpointMark> of_kind(const std::vector<CheckpointMark>& marks, CheckpointMarkKind k) {
  std::vector<CheckpointMark> out;
  for (const CheckpointMark& m : marks)
    if (m.kind == k) out.push_back(m);
  return out;
}

}  // namespace

TEST(CheckpointMarks, AreRankZerosCheckpointSpansWithTheirStepsAndOverlap) {
  Trace t(2);
  const std::uint16_t save = t.label("save", {.part = RunPart::checkpoint}),
                      write = t.label("write", {.part = RunPart::checkpoint_write}),
                      resume = t.label("resume", {.part = RunPart::resume}),
                      timed = t.label("timed", {.part = RunPart::timed});
  span(t, 0, timed, 0, 1000, -1);  // not a checkpoint's
  span(t, 0, resume, 10, 40, 4);
  span(t, 0, save, 50, 150, 6);    // an asynchronous save's staging copy...
  span(t, 0, write, 100, 300, 6);  // ...its write, 50 ns of it inside the staging, 10 inside the finish
  span(t, 0, save, 250, 260, 6);   // ...and its finish
  span(t, 1, save, 50, 150, 6);    // rank 1's: the lanes show them, the marks are rank 0's
  const std::vector<CheckpointMark> m = checkpoint_marks(from_trace(t));
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].kind, CheckpointMarkKind::resume);
  EXPECT_EQ(m[0].step, 4);
  EXPECT_EQ(m[0].begin_ns, 10);
  EXPECT_EQ(m[0].end_ns, 40);
  EXPECT_EQ(m[1].kind, CheckpointMarkKind::save);
  EXPECT_EQ(m[2].kind, CheckpointMarkKind::write);
  EXPECT_EQ(m[2].beside_training_ns, 200 - 50 - 10);
  EXPECT_EQ(m[3].kind, CheckpointMarkKind::save);
  EXPECT_EQ(m[3].begin_ns, 250);
  for (const CheckpointMark& k : m) EXPECT_EQ(k.step, k.kind == CheckpointMarkKind::resume ? 4 : 6);
}

TEST(CheckpointMarks, FromTheZeroLabsSavesAndResume) {
  const std::string sync_dir = fresh_dir("sync"), async_dir = fresh_dir("async");
  // Synchronous: one save span per checkpoint (steps 2, 4, 6), its file's write inside it.
  const std::vector<CheckpointMark> sync = zero_marks({{"checkpoint-every", "2"}, {"checkpoint-dir", sync_dir}});
  const std::vector<CheckpointMark> saves = of_kind(sync, CheckpointMarkKind::save),
                                    writes = of_kind(sync, CheckpointMarkKind::write);
  ASSERT_EQ(saves.size(), 3u);
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_TRUE(of_kind(sync, CheckpointMarkKind::resume).empty());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(saves[i].step, 2 * int(i + 1));
    EXPECT_EQ(writes[i].step, saves[i].step);
    EXPECT_GE(writes[i].begin_ns, saves[i].begin_ns);
    EXPECT_LE(writes[i].end_ns, saves[i].end_ns);
    EXPECT_EQ(writes[i].beside_training_ns, 0);
  }
  // Asynchronous: each checkpoint's staging copy and its finish after the next step (the last
  // one's after the last step); the write starts inside the first and has ended by the second's end.
  const std::vector<CheckpointMark> async =
      zero_marks({{"checkpoint-every", "2"}, {"checkpoint-dir", async_dir}, {"checkpoint-async", "on"}});
  const std::vector<CheckpointMark> halves = of_kind(async, CheckpointMarkKind::save),
                                    async_writes = of_kind(async, CheckpointMarkKind::write);
  ASSERT_EQ(halves.size(), 6u);
  ASSERT_EQ(async_writes.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const CheckpointMark &staging = halves[2 * i], &finish = halves[2 * i + 1], &w = async_writes[i];
    EXPECT_EQ(staging.step, 2 * int(i + 1));
    EXPECT_EQ(finish.step, staging.step);
    EXPECT_GE(w.begin_ns, staging.begin_ns);
    EXPECT_LE(w.end_ns, finish.end_ns);
    std::printf("asynchronous save of step %d: its write %.3f ms, %.3f ms of it beside training\n", staging.step,
                double(w.end_ns - w.begin_ns) * 1e-6, double(w.beside_training_ns) * 1e-6);
  }
  // Resumed from step 2: the read of that checkpoint first, then the saves of steps 4 and 6.
  const std::vector<CheckpointMark> resumed = zero_marks(
      {{"resume", sync_dir + "/step-000002"}, {"checkpoint-every", "2"}, {"checkpoint-dir", fresh_dir("resumed")}});
  const std::vector<CheckpointMark> reads = of_kind(resumed, CheckpointMarkKind::resume),
                                    later = of_kind(resumed, CheckpointMarkKind::save);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].step, 2);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].step, 4);
  EXPECT_GT(later[0].begin_ns, reads[0].end_ns);
}
