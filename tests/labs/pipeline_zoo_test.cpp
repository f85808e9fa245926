// Today's schedules (core/theory/schedule.h: zb-h2, zb-v, interleaved-zb, dualpipev, beside
// the four before them) against their published formulas in the simulator, the V placement,
// and torch.distributed.pipelining's CSV both ways (core/theory/schedule_csv.h). The
// formulas are closed forms from the papers (schedule_formulas.cpp), never the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/theory/schedule.h"
#include "core/theory/schedule_csv.h"

namespace dtl::pipeline {
namespace {

// F = 1, B = 2 (full), W = 1 for one stage's model: Qi et al.'s T_F = T_B = T_W.
const ActionTimes kStageTimes{1, 2, 1, 0};

Simulation simulate_stage_times(const Schedule& s, const ActionTimes& t) {
  const double v = s.config.chunks;
  return simulate(s, ActionTimes{t.forward / v, t.backward / v, t.weight_part() / v, 0});
}

TEST(PipelineZoo, EveryScheduleMatchesItsPublishedBubbleAndInFlight) {
  double worst = 0;
  for (ScheduleKind k : builtin_schedules())
    for (int P : {4, 8})
      for (int M : {P, 2 * P, 4 * P}) {
        const ScheduleConfig c = config_for(k, P, M, 2);
        if (k == ScheduleKind::dualpipe_v && M < 2 * P) {  // torch's rule: M ≥ 2P virtual stages
          EXPECT_THROW(validate(k, c), UsageError);
          continue;
        }
        const Schedule s = make_schedule(k, c);
        ASSERT_NO_THROW(check_schedule(s)) << schedule_name(k) << " P=" << P << " M=" << M;
        const Simulation sim = simulate_stage_times(s, kStageTimes);
        const PublishedBubble pub = published_bubble(k, s.config, kStageTimes);
        ASSERT_TRUE(pub.applies) << schedule_name(k) << " P=" << P << " M=" << M;
        const double got = pub.tiled ? sim.bubble_tiled() : sim.bubble_fraction();
        worst = std::max(worst, std::abs(got - pub.idle_share));
        if (P == 4)
          std::printf("%-14s P=%d M=%2d: simulated %.4f, %s %.4f\n", schedule_name(k), P, M, got, pub.formula,
                      pub.idle_share);
        EXPECT_NEAR(got, pub.idle_share, 0.03) << schedule_name(k) << " P=" << P << " M=" << M << " " << pub.formula;
        for (int st = 0; st < P; ++st)
          EXPECT_EQ(max_in_flight(s, st), published_in_flight(k, s.config, st))
              << schedule_name(k) << " P=" << P << " M=" << M << " stage " << st;
      }
  std::printf("largest |simulated - published| bubble: %.2g\n", worst);
}

TEST(PipelineZoo, ZeroBubbleSchedulesReachZeroWithStepsBackToBackAndEqualTimes) {
  for (int P : {4, 8})
    for (ScheduleKind k : {ScheduleKind::zb_h2, ScheduleKind::zb_v}) {
      const Schedule s = make_schedule(k, config_for(k, P, 4 * P, 2));
      const Simulation sim = simulate_stage_times(s, kStageTimes);
      EXPECT_NEAR(sim.bubble_tiled(), 0, 1e-12) << schedule_name(k) << " P=" << P;
      // The step across stages still has the fill: no better than zb-h1's (P−1)/(3M+P−1).
      EXPECT_GT(sim.bubble_fraction(), 0.0) << schedule_name(k);
    }
}

TEST(PipelineZoo, ValidateNamesTheNewRules) {
  const auto message = [](ScheduleKind k, ScheduleConfig c) {
    try {
      validate(k, c);
    } catch (const UsageError& e) { return std::string(e.what()); }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message(ScheduleKind::dualpipe_v, {4, 6, 2}),
            "dualpipev needs at least as many micro-batches as virtual stages (M=6 < 2P=8): raise --micro-batches to "
            "8 or more");
  EXPECT_NE(message(ScheduleKind::zb_v, {4, 8, 3}).find("zb-v folds the model into a V of 2 chunks per stage (v=3)"),
            std::string::npos);
  EXPECT_NE(message(ScheduleKind::interleaved_zb, {4, 6, 2}).find("interleaved-zb needs M a multiple of P"),
            std::string::npos);
  EXPECT_NE(message(ScheduleKind::zb_h2, {4, 3, 1}).find("zb-h2 needs at least as many micro-batches as stages"),
            std::string::npos);
  EXPECT_EQ(message(ScheduleKind::zb_v, {4, 4, 2}), "(accepted)");
}

TEST(PipelineZoo, VPlacementFoldsTheModelBack) {
  const Schedule s = make_schedule(ScheduleKind::zb_v, config_for(ScheduleKind::zb_v, 4, 8, 1));
  ASSERT_EQ(s.config.chunks, 2);
  ASSERT_EQ(s.config.placement, Placement::vee);
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(s.virtual_stage(st, 0), st);
    EXPECT_EQ(s.virtual_stage(st, 1), 7 - st);
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(s.stage_of(s.virtual_stage(st, c)), st);
      EXPECT_EQ(s.chunk_of(s.virtual_stage(st, c)), c);
    }
  }
  EXPECT_EQ(s.stage_of(7), 0) << "the last virtual stage is on rank 0";
  const Schedule loop = make_schedule(ScheduleKind::interleaved, {4, 8, 2});
  EXPECT_EQ(loop.virtual_stage(1, 1), 5);
  EXPECT_EQ(loop.stage_of(7), 3);
}

TEST(PipelineZoo, DualPipeVOverlapsPairsOfDifferentMicroBatches) {
  const Schedule s = make_schedule(ScheduleKind::dualpipe_v, config_for(ScheduleKind::dualpipe_v, 4, 16, 2));
  for (int st = 0; st < 4; ++st) {
    int pairs = 0;
    const auto& list = s.stages[std::size_t(st)];
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].with_next) {
        ++pairs;
        ASSERT_EQ(list[i].op, Pass::forward);
        ASSERT_EQ(list[i + 1].op, Pass::backward);
        EXPECT_NE(list[i].chunk, list[i + 1].chunk) << "F of one direction beside B of the other";
      }
    // Steps 4 and 5 of DualPipeV: 2(M − 2P + s + 1) + (P − s − 1) pairs, one fewer on the last stage.
    const int want = 2 * (16 - 8 + st + 1) + (4 - st - 1) - (st == 3 ? 1 : 0);
    EXPECT_EQ(pairs, want) << "stage " << st;
  }
}

// Gold tables written by hand from the step rules of torch's ScheduleZBVZeroBubble and
// ScheduleDualPipeV (schedules.py; DualPipe's dualpipev.py), in torch's own cell format.
TEST(PipelineZoo, ZbVAndDualPipeVEqualTablesDerivedByHandFromTorchsSteps) {
  // ZB-V, P = 2, M = 3: rank 0 warms up 2P − 1 = 3 F0, then P rounds F1 I1 W1; the steady
  // loop F0 I0 W0 F1 I1 W1 (no F0 left); cool-down P rounds I0 W0. Rank 1: 1 F0, F1 F0,
  // F1 I1 W1, one steady round, cool-down I0 I1, I0 W0, then the deferred W1 and W0.
  EXPECT_EQ(write_torch_csv(make_schedule(ScheduleKind::zb_v, config_for(ScheduleKind::zb_v, 2, 3, 2))),
            "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0I0,0W0,3F2,3I2,3W2,0I1,0W1,0I2,0W2\n"
            "1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1I1,2I2,1I2,1W1,2W2,1W2\n");
  // DualPipeV, P = 2, M = 4, steps 1–8. Rank 0: F0 F0 | F0 F1 | I1 W F1 | (F0;B1) (F1;B0) |
  // B1 (F1;B0) | B1 I0 | W I0 | W. Rank 1: F0 F1 F0 F1 | F0 B1 (its first pair not
  // overlapped) (F1;B0) (F0;B1) (F1;B0) | B1 B0 B1-as-I B0-as-I | W W.
  EXPECT_EQ(write_torch_csv(make_schedule(ScheduleKind::dualpipe_v, config_for(ScheduleKind::dualpipe_v, 2, 4, 2))),
            "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,(3F3;0B1)OVERLAP_F_B,3B3,"
            "0I2,0W2,0I3,0W3\n"
            "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,(2F3;1B1)OVERLAP_F_B,2B2,1B2,2I3,1I3,"
            "2W3,1W3\n");
}

// ---- torch.distributed.pipelining's CSV ---------------------------------------------------

// DualPipeV's pairs per stage against the count its steps give: 2 per main step (M − 2P + s + 1
// of them) and 1 per step 5 (P − s − 1), one fewer on the last stage, whose first F0 runs apart.
// The pipeline lab's pairs_stage rows predict this count; the three parts of dualpipe_v_part are
// the whole list.
TEST(PipelineZoo, DualPipeVPairsPerStageFollowItsSteps) {
  for (int P = 2; P <= 8; ++P)
    for (int M = 2 * P; M <= 4 * P; ++M) {
      const Schedule s = make_schedule(ScheduleKind::dualpipe_v, config_for(ScheduleKind::dualpipe_v, P, M, 2));
      for (int st = 0; st < P; ++st) {
        const std::vector<Action>& list = s.stages[std::size_t(st)];
        const long pairs = std::count_if(list.begin(), list.end(), [](const Action& a) { return a.with_next; });
        const int formula = 2 * (M - 2 * P + st + 1) + (P - st - 1) - (st == P - 1 ? 1 : 0);
        ASSERT_EQ(pairs, formula) << "P=" << P << " M=" << M << " stage " << st;
        std::vector<Action> whole;
        for (DualPipePart part : {DualPipePart::warm_up, DualPipePart::overlapped, DualPipePart::cool_down}) {
          const std::vector<Action> piece = dualpipe_v_part(P, M, st, part);
          whole.insert(whole.end(), piece.begin(), piece.end());
        }
        ASSERT_EQ(whole, list) << "P=" << P << " M=" << M << " stage " << st;
      }
    }
}

// A placement table (Schedule::placed, the lab's V from the learner) reads back as the rule it
// writes out, runs the same in the simulator, and is refused when it misses or doubles a virtual
// stage, or names the wrong number of chunks.
TEST(PipelineZoo, APlacementTableActsAsItsRuleAndIsChecked) {
  const int P = 4, M = 8;
  const Schedule rule = make_schedule(ScheduleKind::zb_v, config_for(ScheduleKind::zb_v, P, M, 2));
  Schedule table = rule;
  for (int st = 0; st < P; ++st)
    for (int c = 0; c < 2; ++c) table.placed.push_back(c == 0 ? st : 2 * P - 1 - st);  // the V, by hand
  for (int vs = 0; vs < 2 * P; ++vs) {
    EXPECT_EQ(table.stage_of(vs), rule.stage_of(vs)) << "virtual stage " << vs;
    EXPECT_EQ(table.chunk_of(vs), rule.chunk_of(vs)) << "virtual stage " << vs;
    EXPECT_EQ(table.virtual_stage(table.stage_of(vs), table.chunk_of(vs)), vs);
  }
  ASSERT_NO_THROW(check_schedule(table));
  EXPECT_EQ(simulate(table, kStageTimes).makespan, simulate(rule, kStageTimes).makespan);
  Schedule doubled = table;
  doubled.placed[1] = 0;  // stage 0's chunk 1 on virtual stage 0 as well
  EXPECT_THROW(check_schedule(doubled), UsageError);
  Schedule outside = table;
  outside.placed[7] = 8;
  EXPECT_THROW(check_schedule(outside), UsageError);
  Schedule short_table = table;
  short_table.placed.pop_back();
  EXPECT_THROW(check_schedule(short_table), UsageError);
  Schedule loop = table;  // interleaving's loop under ZB-V's order: a deadlock
  for (int st = 0; st < P; ++st)
    for (int c = 0; c < 2; ++c) loop.placed[std::size_t(st * 2 + c)] = c * P + st;
  EXPECT_THROW(check_schedule(loop), UsageError);
}

TEST(PipelineCsv, EveryBuiltInScheduleRoundTripsIdentically) {
  int cases = 0;
  for (ScheduleKind k : builtin_schedules())
    for (int P : {1, 2, 4, 8})
      for (int M = 1; M <= 4 * P; ++M) {
        const ScheduleConfig c = config_for(k, P, M, 2);
        try {
          validate(k, c);
        } catch (const UsageError&) { continue; }
        const Schedule s = make_schedule(k, c);
        const CsvSchedule back = read_torch_csv(write_torch_csv(s));
        ++cases;
        EXPECT_EQ(back.schedule.stages, s.stages) << schedule_name(k) << " P=" << P << " M=" << M;
        EXPECT_EQ(back.schedule.config.micro_batches, M);
        EXPECT_EQ(back.schedule.config.chunks, s.config.chunks);
        for (int st = 0; st < P; ++st)
          for (int ch = 0; ch < s.config.chunks; ++ch)
            EXPECT_EQ(back.schedule.virtual_stage(st, ch), s.virtual_stage(st, ch)) << schedule_name(k);
      }
  std::printf("%d schedules written and read back\n", cases);
}

TEST(PipelineCsv, WritesTorchCells) {
  // zb-h1, P = 2, M = 2 (gold table of pipeline_schedule_test.cpp): B's with a W are I's.
  EXPECT_EQ(write_torch_csv(make_schedule(ScheduleKind::zb_h1, {2, 2, 1})),
            "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");
  // 1F1B: full backwards.
  EXPECT_EQ(write_torch_csv(make_schedule(ScheduleKind::one_f_one_b, {2, 2, 1})), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

// Two ranks in a V (rank 0 holds stages 0 and 3), written by hand: overlapped pairs, I and
// W, an empty (idle) cell and a communication cell torch's lowered form would hold.
const char* kHandWrittenV =
    "0F0,0F1,3F0,3I0,3W0,(3F1;0B0)OVERLAP_F_B,3B1,,0I1,0W1\n"
    "1F0,2F0,1F1,2B0,(2F1;1B0)OVERLAP_F_B,2SEND_B1,2B1,1B1\n";

TEST(PipelineCsv, ReadsAHandWrittenScheduleWithPairsAndSplitBackwards) {
  const CsvSchedule csv = read_torch_csv(kHandWrittenV);
  const Schedule& s = csv.schedule;
  EXPECT_EQ(s.config.stages, 2);
  EXPECT_EQ(s.config.micro_batches, 2);
  EXPECT_EQ(s.config.placement, Placement::vee);
  ASSERT_EQ(s.stages[0].size(), 10u);
  EXPECT_TRUE(s.stages[0][5].with_next);                      // 3F1, paired with 0B0
  EXPECT_EQ(s.stages[0][6], (Action{Pass::backward, 0, 0}));  // 0B0: full
  EXPECT_FALSE(s.splits_backward(0, 0, 0));
  EXPECT_TRUE(s.splits_backward(0, 1, 0));  // 0I1 with 0W1
  EXPECT_EQ(csv.place(0, 9), "row 1 (rank 0), cell 10 \"0W1\"");
  const Simulation sim = simulate(s, ActionTimes{});
  EXPECT_EQ(sim.actions.size(), 18u);
}

void expect_csv_error(const std::string& text, const std::string& part) {
  try {
    read_torch_csv(text);
    ADD_FAILURE() << "expected UsageError containing \"" << part << "\" for\n" << text;
  } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); }
}

TEST(PipelineCsv, BrokenFilesNameTheRowCellAndRule) {
  expect_csv_error("0F0,0B0\n1F0,1X0\n", "row 2 (rank 1), cell 2 \"1X0\": an action is <stage><F|I|B|W><micro-batch>");
  expect_csv_error("0F0,0I0\n1F0,1B0\n", "row 1 (rank 0), cell 2 \"0I0\": an I (input gradient) needs its W");
  expect_csv_error("0F0,0B0,0W0\n1F0,1B0\n", "B is the full backward, so its W would run twice");
  expect_csv_error("0F0,(0B0;0F1)OVERLAP_F_B\n", "an overlapped pair is a forward then a backward");
  expect_csv_error("0F0,0B0\n0F1,0B1\n", "stage 0 is on rank 0 too");
  expect_csv_error("0F0,0B0\n2F0,2B0\n", "do not split evenly");
  expect_csv_error("0B0,0F0\n1F0,1B0\n", "row 1 (rank 0), cell 1 \"0B0\": B0.0 before its F");
  // Rank 0 waits for micro-batch 0's gradient before sending micro-batch 1 on, which rank 1
  // needs before it sends that gradient: a deadlock, found before anything runs.
  expect_csv_error("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n", "deadlocks: stage 0 waits at its action #1");
  expect_csv_error("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n", "(row 1 (rank 0), cell 2 \"0B0\")");
  expect_csv_error("", "the file is empty");
}

}  // namespace
}  // namespace dtl::pipeline
