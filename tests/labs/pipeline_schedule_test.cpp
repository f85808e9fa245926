// Pipeline schedules (core/theory/schedule.h): hand-written gold tables and validate's
// messages. Properties over many (P, M, v) and the curriculum's bubble numbers from the
// simulator are in pipeline_simulator_test.cpp (same executable).
//
// The gold tables were written by hand before comparing, from the rules of the sources:
//   gpipe        all F in order, then all B in order (GPipe; torch ScheduleGPipe)
//   1f1b         warm-up P − s − 1 F, steady F B pairs, cool-down B (Narayanan et al. 2021)
//   interleaved  Megatron-LM: the k-th (micro-batch, chunk) of a stage walks groups of P
//                micro-batches, chunk 0 then chunk 1 within a group (backwards: chunk 1
//                first); warm-up 2(P − s − 1) + (v − 1)·P, then F B pairs, then B
//   zb-h1        Qi et al. 2023 §2.1 as in their DeepSpeed ZeroBubbleH1Pipeline: warm-up
//                P − s − 1 F, s steps of F B, then F B W, cool-down B W, then the deferred W's
// "F3.1" is micro-batch 3 on chunk 1 (interleaved only).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/theory/schedule.h"

namespace dtl::pipeline {
namespace {

std::string render(const std::vector<Action>& list, bool chunks) {
  std::string out;
  for (const Action& a : list) {
    if (!out.empty()) out += ' ';
    out += pass_letter(a.op);
    out += std::to_string(a.micro_batch);
    if (chunks) {
      out += '.';
      out += std::to_string(a.chunk);
    }
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// Compares each stage's list with the gold table; the message names the first difference.
void expect_table(ScheduleKind kind, ScheduleConfig c, const std::vector<std::string>& gold) {
  const Schedule s = make_schedule(kind, c);
  ASSERT_EQ(s.stages.size(), gold.size());
  for (size_t st = 0; st < gold.size(); ++st) {
    const std::vector<std::string> want = words(gold[st]), got = words(render(s.stages[st], c.chunks > 1));
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    EXPECT_TRUE(i == want.size() && i == got.size())
        << schedule_name(kind) << " P=" << c.stages << " M=" << c.micro_batches << " v=" << c.chunks << " stage " << st
        << ": first difference at action #" << i << ": want " << (i < want.size() ? want[i] : "(end)") << ", got "
        << (i < got.size() ? got[i] : "(end)") << "\n  want: " << gold[st]
        << "\n  got:  " << render(s.stages[st], c.chunks > 1);
  }
}

// ---- gold tables ------------------------------------------------------------------------

TEST(PipelineGold, GpipeP4M8) {
  const std::string all = "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7";
  expect_table(ScheduleKind::gpipe, {4, 8, 1}, {all, all, all, all});
}

TEST(PipelineGold, GpipeP2M4) {
  const std::string all = "F0 F1 F2 F3 B0 B1 B2 B3";
  expect_table(ScheduleKind::gpipe, {2, 4, 1}, {all, all});
}

TEST(PipelineGold, OneFOneBP4M8) {
  expect_table(ScheduleKind::one_f_one_b, {4, 8, 1},
               {"F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7", "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
                "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7", "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"});
}

TEST(PipelineGold, OneFOneBP2M4) {
  expect_table(ScheduleKind::one_f_one_b, {2, 4, 1}, {"F0 F1 B0 F2 B1 F3 B2 B3", "F0 B0 F1 B1 F2 B2 F3 B3"});
}

TEST(PipelineGold, ZbH1P4M8) {
  expect_table(ScheduleKind::zb_h1, {4, 8, 1},
               {"F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
                "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
                "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
                "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7"});
}

TEST(PipelineGold, ZbH1P2M4) {
  expect_table(ScheduleKind::zb_h1, {2, 4, 1},
               {"F0 F1 B0 W0 F2 B1 W1 F3 B2 W2 B3 W3", "F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 W3"});
}

TEST(PipelineGold, InterleavedP4M8V2) {
  expect_table(ScheduleKind::interleaved, {4, 8, 2},
               {// warm-up 10
                "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 "
                "F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 "
                "B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
                // warm-up 8
                "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 "
                "F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 F4.1 B0.0 F5.1 B1.0 F6.1 B2.0 F7.1 B3.0 "
                "B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
                // warm-up 6
                "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 "
                "F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 F7.0 B1.0 F4.1 B2.0 F5.1 B3.0 "
                "F6.1 B4.1 F7.1 B5.1 "
                "B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
                // warm-up 4
                "F0.0 F1.0 F2.0 F3.0 "
                "F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
                "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 "
                "B4.0 B5.0 B6.0 B7.0"});
}

TEST(PipelineGold, InterleavedP2M4V2) {
  expect_table(ScheduleKind::interleaved, {2, 4, 2},
               {"F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0",
                "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0"});
}

// ---- validate ---------------------------------------------------------------------------

void expect_usage_error(ScheduleKind k, ScheduleConfig c, const std::string& text) {
  try {
    validate(k, c);
    ADD_FAILURE() << schedule_name(k) << ": expected UsageError containing \"" << text << "\"";
  } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what(); }
}

TEST(PipelineValidate, NamesTheRuleAndTheFix) {
  expect_usage_error(ScheduleKind::one_f_one_b, {4, 2, 1},
                     "1f1b needs at least as many micro-batches as stages (M=2 < P=4): raise --micro-batches");
  expect_usage_error(ScheduleKind::zb_h1, {8, 7, 1},
                     "zb-h1 needs at least as many micro-batches as stages (M=7 < P=8): raise --micro-batches");
  expect_usage_error(ScheduleKind::interleaved, {4, 6, 2},
                     "interleaved needs M a multiple of P (M=6, P=4): set --micro-batches to 8");
  expect_usage_error(ScheduleKind::interleaved, {4, 8, 1}, "interleaved needs at least 2 chunks per stage (v=1)");
  expect_usage_error(ScheduleKind::interleaved, {1, 4, 2}, "interleaved needs at least 2 stages (P=1)");
  expect_usage_error(ScheduleKind::gpipe, {4, 8, 2}, "gpipe runs one chunk per stage (v=2): drop --chunks");
  expect_usage_error(ScheduleKind::zb_h1, {4, 8, 3}, "zb-h1 runs one chunk per stage (v=3)");
  expect_usage_error(ScheduleKind::gpipe, {0, 8, 1}, "at least one stage (P=0)");
  expect_usage_error(ScheduleKind::gpipe, {2, 0, 1}, "at least one micro-batch (M=0)");
  EXPECT_NO_THROW(validate(ScheduleKind::gpipe, {4, 1, 1}));
  EXPECT_NO_THROW(validate(ScheduleKind::interleaved, {4, 4, 2}));
  EXPECT_THROW(make_schedule(ScheduleKind::one_f_one_b, {4, 2, 1}), UsageError);
}

TEST(PipelineSchedule, Names) {
  EXPECT_STREQ(schedule_name(ScheduleKind::gpipe), "gpipe");
  EXPECT_STREQ(schedule_name(ScheduleKind::one_f_one_b), "1f1b");
  EXPECT_STREQ(schedule_name(ScheduleKind::interleaved), "interleaved");
  EXPECT_STREQ(schedule_name(ScheduleKind::zb_h1), "zb-h1");
  EXPECT_STREQ(pass_letter(Pass::forward), "F");
  EXPECT_STREQ(pass_letter(Pass::backward), "B");
  EXPECT_STREQ(pass_letter(Pass::weight), "W");
  EXPECT_EQ(parse_pass_letter("B"), Pass::backward);
  EXPECT_FALSE(parse_pass_letter("").has_value());  // the optimizer's and recompute's "letter"
  EXPECT_FALSE(parse_pass_letter("X").has_value());
}

}  // namespace
}  // namespace dtl::pipeline
