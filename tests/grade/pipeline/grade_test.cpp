// Graded tests of the pipeline exercises (exercises/pipeline.h): the 1F1B order against
// tables written by hand and its in-flight bound; the stage loop run on 4 thread ranks
// under hand-written GPipe and 1F1B orders, with a watchdog (a loop that waits on its
// sends deadlocks there) and the data that arrives checked at every stage; the W split against
// ZB-H1 lists written by hand and its rules on other lists; the V placement against tables written
// by hand and its fold; DualPipeV's pairs against lists written by hand and core/theory's schedule.
#include <cstdlib>
#include <sstream>

#include "exercises/pipeline.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using pipeline::Action;

namespace {

// "F0 F1 B0 ..." as a learner reads a schedule.
std::string text(const std::vector<Action>& actions) {
  std::string s;
  for (const Action& a : actions)
    s += (s.empty() ? "" : " ") +
         std::string(a.op == Pass::forward    ? "F"
                     : a.op == Pass::backward ? "B"
                                              : "W") +
         std::to_string(a.micro_batch);
  return s;
}

std::vector<Action> parse(const std::string& t) {
  std::vector<Action> out;
  std::istringstream in(t);
  std::string w;
  while (in >> w)
    out.push_back({w[0] == 'F'   ? Pass::forward
                   : w[0] == 'B' ? Pass::backward
                                 : Pass::weight,
                   std::stoi(w.substr(1)), 0});
  return out;
}

std::string case_of(int P, int M, int s) {
  return "one_f_one_b(stages " + std::to_string(P) + ", micro_batches " + std::to_string(M) + ", stage " +
         std::to_string(s) + ")";
}

// 1F1B for P = 4, M = 8, written by hand: warm-up P - s - 1 forwards, then F/B pairs, then
// the remaining backwards (Narayanan et al. 2021, figure 4).
const char* kOneFOneB48[] = {
    "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
    "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
};

}  // namespace

TEST(OneFOneB, MatchesTheHandWrittenTableForFourStagesAndEightMicroBatches) {
  for (int s = 0; s < 4; ++s) {
    const std::string got = text(ex::one_f_one_b(4, 8, s));
    DTL_GRADE_EXPECT(got == kOneFOneB48[s])
        << case_of(4, 8, s) << " is\n  " << got << "\nexpected\n  " << kOneFOneB48[s];
  }
}

TEST(OneFOneB, FewMicroBatchesAndOneStage) {
  // M = 2 on 4 stages: stage 0's warm-up is cut to M forwards; one stage alternates.
  const std::pair<std::string, std::string> cases[] = {
      {text(ex::one_f_one_b(4, 2, 0)), "F0 F1 B0 B1"},
      {text(ex::one_f_one_b(4, 2, 3)), "F0 B0 F1 B1"},
      {text(ex::one_f_one_b(1, 3, 0)), "F0 B0 F1 B1 F2 B2"},
      {text(ex::one_f_one_b(2, 1, 0)), "F0 B0"},
  };
  const char* names[] = {"(stages 4, micro_batches 2, stage 0)", "(stages 4, micro_batches 2, stage 3)",
                         "(stages 1, micro_batches 3, stage 0)", "(stages 2, micro_batches 1, stage 0)"};
  for (std::size_t i = 0; i < std::size(cases); ++i)
    DTL_GRADE_EXPECT(cases[i].first == cases[i].second)
        << "one_f_one_b" << names[i] << " is " << cases[i].first << ", expected " << cases[i].second;
}

TEST(OneFOneB, EveryMicroBatchOnceInOrderAndAtMostPMinusSInFlight) {
  for (int P = 1; P <= 8; ++P)
    for (int M = 1; M <= 16; ++M)
      for (int s = 0; s < P; ++s) {
        const std::vector<Action> a = ex::one_f_one_b(P, M, s);
        int next_f = 0, next_b = 0, in_flight = 0, most = 0;
        bool ok = a.size() == std::size_t(2 * M);
        for (const Action& x : a) {
          ok = ok && x.chunk == 0 && x.op != Pass::weight;
          if (x.op == Pass::forward) ok = ok && x.micro_batch == next_f++, most = std::max(most, ++in_flight);
          if (x.op == Pass::backward) ok = ok && x.micro_batch == next_b++ && next_b <= next_f, --in_flight;
        }
        DTL_GRADE_ASSERT(ok) << case_of(P, M, s) << " = " << text(a)
                             << ": every micro-batch must be forwarded then backwarded once, both in order 0..M-1";
        DTL_GRADE_ASSERT(most <= std::min(M, P - s))
            << case_of(P, M, s) << " holds " << most
            << " micro-batches at once; 1F1B holds at most min(M, P - stage) = " << std::min(M, P - s);
      }
}

namespace {

// Runs the learner's stage loop on P thread ranks, stage s = rank s, with `order(s)` as
// each stage's actions. Each forward adds (s + 1) to the value it received (micro-batch m
// enters as m); each backward adds 10·(s + 1) to the gradient it received (the last stage
// starts from its own output). Checks on every stage that each compute saw its input, and
// on stage 0 the gradients that come back.
void run_loop(int P, int M, const std::function<std::vector<Action>(int)>& order, const std::string& name) {
  std::vector<std::string> problems(static_cast<std::size_t>(P));
  const auto run = grade::run_graded(P, [&](Comm& comm) {
    const int s = comm.rank();
    std::vector<float> in(std::size_t(M), -1), out(std::size_t(M), -1), gin(std::size_t(M), -1),
        gout(std::size_t(M), -1);
    std::string& problem = problems[std::size_t(s)];
    ex::StageOps ops;
    ops.has_previous = [s](int) { return s > 0; };
    ops.has_next = [s, P](int) { return s < P - 1; };
    ops.recv_activation = [&](int m, int) { return comm.irecv(&in[std::size_t(m)], 4, s - 1, m); };
    ops.send_activation = [&](int m, int) { return comm.isend(&out[std::size_t(m)], 4, s + 1, m); };
    ops.recv_gradient = [&](int m, int) { return comm.irecv(&gin[std::size_t(m)], 4, s + 1, 10000 + m); };
    ops.send_gradient = [&](int m, int) { return comm.isend(&gout[std::size_t(m)], 4, s - 1, 10000 + m); };
    ops.forward = [&](int m, int) {
      const float want = float(m + s * (s + 1) / 2);  // m + 1 + 2 + .. + s
      const float x = s == 0 ? float(m) : in[std::size_t(m)];
      if (x != want && problem.empty())
        problem = "stage " + std::to_string(s) + " computed the forward of micro-batch " + std::to_string(m) +
                  " before its activation arrived (it read " + grade::plain(x) + ", expected " + grade::plain(want) +
                  ")";
      out[std::size_t(m)] = x + float(s + 1);
    };
    ops.backward = [&](int m, int) {
      const float g = s == P - 1 ? out[std::size_t(m)] : gin[std::size_t(m)];
      if (s < P - 1 && g < 0 && problem.empty())
        problem = "stage " + std::to_string(s) + " computed the backward of micro-batch " + std::to_string(m) +
                  " before its gradient arrived";
      gout[std::size_t(m)] = g + 10.0f * float(s + 1);
    };
    ops.weight = [](int, int) {};
    std::vector<Request> sends;
    ex::run_stage(order(s), ops, sends);
    for (Request& r : sends) r.wait();
    comm.barrier();
    if (s == 0 && problem.empty())
      for (int m = 0; m < M; ++m) {
        const float want = float(m + P * (P + 1) / 2 + 10 * P * (P + 1) / 2);
        if (gout[std::size_t(m)] != want) {
          problem = "the gradient of micro-batch " + std::to_string(m) + " back on stage 0 is " +
                    grade::plain(gout[std::size_t(m)]) + ", expected " + grade::plain(want);
          break;
        }
      }
  });
  DTL_ASSERT_RAN(
      run, "run_stage under " + name + " on " + std::to_string(P) + " stages (a loop that waits on a send deadlocks)");
  for (const std::string& p : problems) DTL_GRADE_EXPECT(p.empty()) << "run_stage under " << name << ": " << p;
}

}  // namespace

TEST(RunStage, OneFOneBOnFourStagesNeverDeadlocksAndDeliversEveryTensor) {
  run_loop(
      4, 8, [](int s) { return parse(kOneFOneB48[s]); }, "1F1B (P=4, M=8)");
}

TEST(RunStage, GPipeOnFourStages) {
  run_loop(
      4, 6, [](int) { return parse("F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5"); }, "GPipe (P=4, M=6)");
}

TEST(RunStage, WeightActionsOnlyCompute) {
  // Zero-bubble's split backward: W(m) after B(m) on each stage, sends unchanged.
  run_loop(
      2, 3, [](int s) { return parse(s == 0 ? "F0 F1 B0 W0 F2 B1 W1 B2 W2" : "F0 B0 W0 F1 B1 W1 F2 B2 W2"); },
      "zero-bubble order (P=2, M=3)");
}

namespace {

// ZB-H1 for P = 4, M = 8, written by hand from kOneFOneB48: stage s lets s W's wait, each W
// of the oldest waiting B, the rest after the last action (Qi et al. 2023, ZB-H1).
const char* kZbH1From1F1B48[] = {
    "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
    "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7",
};

std::string split_case(const std::string& list, int lag) {
  return "split_backward(" + list + ", lag " + std::to_string(lag) + ")";
}

// The rules of the W split on any list without W's, or the first one broken ("" if none): the
// F's and B's unchanged and in order; one W per B, after it, the W's in the order of their B's;
// a W only right after a B or another W (or in the tail after the last F or B), and after each
// B and the W's behind it exactly min(lag, B's so far) W's waiting.
std::string broken_rule(const std::vector<Action>& in, const std::vector<Action>& out, int lag) {
  std::vector<Action> kept, weights, backwards;
  for (const Action& a : out) (a.op == Pass::weight ? weights : kept).push_back(a);
  if (kept != in) return "the F's and B's are not the input's, in its order";
  for (const Action& a : in)
    if (a.op == Pass::backward) backwards.push_back(a);
  if (weights.size() != backwards.size()) return "not one W per B";
  int placed_b = 0, placed_w = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Action& a = out[i];
    if (a.op == Pass::weight) {
      const Action& b = backwards[std::size_t(placed_w)];
      if (placed_w >= placed_b || a.micro_batch != b.micro_batch || a.chunk != b.chunk)
        return "W #" + std::to_string(placed_w) + " is not the W of the oldest B still waiting";
      ++placed_w;
      if (i > 0 && out[i - 1].op == Pass::forward) return "a W right after an F";
      continue;
    }
    if (i > 0 && out[i - 1].op != Pass::forward && placed_b > 0 && placed_b - placed_w != std::min(lag, placed_b))
      return "before action #" + std::to_string(i) + ", " + std::to_string(placed_b - placed_w) +
             " W's wait; the rule leaves min(lag, B's so far) = " + std::to_string(std::min(lag, placed_b));
    if (a.op == Pass::backward) ++placed_b;
  }
  return "";
}

}  // namespace

TEST(SplitBackward, MatchesHandWrittenZbH1ForFourStagesAndEightMicroBatches) {
  for (int s = 0; s < 4; ++s) {
    const std::string got = text(ex::split_backward(parse(kOneFOneB48[s]), s));
    DTL_GRADE_EXPECT(got == kZbH1From1F1B48[s]) << split_case("1F1B of stage " + std::to_string(s), s) << " is\n  "
                                                << got << "\nexpected\n  " << kZbH1From1F1B48[s];
  }
}

TEST(SplitBackward, LagZeroPutsEachWRightAfterItsBAndNoBackwardLeavesTheListAlone) {
  const std::pair<const char*, const char*> cases[] = {
      {"F0 F1 B0 B1", "F0 F1 B0 W0 B1 W1"}, {"F0 F1 F2", "F0 F1 F2"}, {"", ""}};
  for (const auto& [in, expected] : cases) {
    const std::string got = text(ex::split_backward(parse(in), 0));
    DTL_GRADE_EXPECT(got == expected) << split_case(std::string("\"") + in + "\"", 0) << " is \"" << got
                                      << "\", expected \"" << expected << "\"";
  }
}

TEST(SplitBackward, KeepsTheRulesOnInterleavedGpipeAnd1F1BListsAtEveryLag) {
  std::vector<std::pair<std::string, std::vector<Action>>> lists;
  for (int s = 0; s < 4; ++s) lists.push_back({"1F1B stage " + std::to_string(s), parse(kOneFOneB48[s])});
  lists.push_back({"GPipe", parse("F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5")});
  // Interleaved (2 chunks, P 2, M 4, stage 0): the W's keep their B's chunk.
  lists.push_back({"interleaved with chunks",
                   {{Pass::forward, 0, 0},
                    {Pass::forward, 1, 0},
                    {Pass::forward, 0, 1},
                    {Pass::forward, 1, 1},
                    {Pass::forward, 2, 0},
                    {Pass::backward, 0, 1},
                    {Pass::forward, 3, 0},
                    {Pass::backward, 1, 1},
                    {Pass::forward, 2, 1},
                    {Pass::backward, 0, 0},
                    {Pass::forward, 3, 1},
                    {Pass::backward, 1, 0},
                    {Pass::backward, 2, 1},
                    {Pass::backward, 3, 1},
                    {Pass::backward, 2, 0},
                    {Pass::backward, 3, 0}}});
  for (const auto& [name, list] : lists)
    for (int lag = 0; lag <= 5; ++lag) {
      const std::vector<Action> out = ex::split_backward(list, lag);
      const std::string problem = broken_rule(list, out, lag);
      DTL_GRADE_EXPECT(problem.empty()) << split_case(name, lag) << " = " << text(out) << ": " << problem;
    }
}

namespace {

// The V for P = 1..4, written by hand: {chunk 0, chunk 1} of each stage, down and back up.
const std::vector<std::vector<std::pair<int, int>>> kVee = {
    {{0, 1}},
    {{0, 3}, {1, 2}},
    {{0, 5}, {1, 4}, {2, 3}},
    {{0, 7}, {1, 6}, {2, 5}, {3, 4}},
};

std::string vee_case(int P, int s, int c) {
  return "vee_stage(stages " + std::to_string(P) + ", stage " + std::to_string(s) + ", chunk " + std::to_string(c) +
         ")";
}

}  // namespace

TEST(VeeStage, MatchesTheHandWrittenVForOneToFourStages) {
  for (std::size_t i = 0; i < kVee.size(); ++i) {
    const int P = int(i) + 1;
    for (int s = 0; s < P; ++s) {
      const auto [down, up] = kVee[i][std::size_t(s)];
      const int got0 = ex::vee_stage(P, s, 0), got1 = ex::vee_stage(P, s, 1);
      DTL_GRADE_EXPECT(got0 == down) << vee_case(P, s, 0) << " is " << got0 << ", expected " << down;
      DTL_GRADE_EXPECT(got1 == up) << vee_case(P, s, 1) << " is " << got1 << ", expected " << up;
    }
  }
}

TEST(VeeStage, CoversTheModelOnceAndFoldsOnTheLastStageUpTo64Stages) {
  for (int P = 1; P <= 64; ++P) {
    std::vector<int> holder(std::size_t(2 * P), -1);
    for (int s = 0; s < P; ++s)
      for (int c = 0; c < 2; ++c) {
        const int vs = ex::vee_stage(P, s, c);
        DTL_GRADE_ASSERT(vs >= 0 && vs < 2 * P)
            << vee_case(P, s, c) << " is " << vs << ", outside the model's 0.." << 2 * P - 1;
        DTL_GRADE_ASSERT(holder[std::size_t(vs)] < 0)
            << vee_case(P, s, c) << " is " << vs << ", a virtual stage another chunk holds already";
        holder[std::size_t(vs)] = s;
      }
    // Down with chunk 0, back up with chunk 1: consecutive virtual stages on neighbouring stages,
    // or on the same one at the fold (P - 1 and P on stage P - 1).
    for (int vs = 0; vs + 1 < 2 * P; ++vs) {
      const int gap = std::abs(holder[std::size_t(vs)] - holder[std::size_t(vs) + 1]);
      DTL_GRADE_EXPECT(gap == (vs == P - 1 ? 0 : 1))
          << "with " << P << " stages, virtual stages " << vs << " and " << vs + 1 << " are on stages "
          << holder[std::size_t(vs)] << " and " << holder[std::size_t(vs) + 1]
          << ": the V runs down the stages and folds back on the last one";
    }
    DTL_GRADE_EXPECT(holder[0] == 0 && holder[std::size_t(2 * P - 1)] == 0)
        << "with " << P << " stages, stage 0 must hold the first and the last virtual stage (the V's ends)";
  }
}

namespace {

// "F5.0" (forward of micro-batch 5 on chunk 0), a pair written as torch does, "(F5.0;B1.1)".
std::string pairs_text(const std::vector<Action>& actions) {
  std::string s;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const auto one = [&](const Action& a) {
      return std::string(a.op == Pass::forward    ? "F"
                         : a.op == Pass::backward ? "B"
                                                  : "W") +
             std::to_string(a.micro_batch) + "." + std::to_string(a.chunk);
    };
    s += s.empty() ? "" : " ";
    if (actions[i].with_next && i + 1 < actions.size()) {
      s += "(" + one(actions[i]) + ";" + one(actions[i + 1]) + ")";
      ++i;
    } else {
      s += one(actions[i]) + (actions[i].with_next ? "+" : "");
    }
  }
  return s;
}

// DualPipeV's steps 4 and 5, written by hand from the counters its warm-up leaves (forwards of
// chunk 0 from 2P - s - 1, of chunk 1 from P, backwards of chunk 1 from P - s - 1, of chunk 0
// from 0): P = 2, M = 4 and P = 4, M = 8.
const char* kDualPipe24[] = {
    "(F3.0;B1.1) (F2.1;B0.0) B2.1 (F3.1;B1.0)",
    "F2.0 B0.1 (F2.1;B0.0) (F3.0;B1.1) (F3.1;B1.0)",
};
const char* kDualPipe48[] = {
    "(F7.0;B3.1) (F4.1;B0.0) B4.1 (F5.1;B1.0) B5.1 (F6.1;B2.0) B6.1 (F7.1;B3.0)",
    "(F6.0;B2.1) (F4.1;B0.0) (F7.0;B3.1) (F5.1;B1.0) B4.1 (F6.1;B2.0) B5.1 (F7.1;B3.0)",
    "(F5.0;B1.1) (F4.1;B0.0) (F6.0;B2.1) (F5.1;B1.0) (F7.0;B3.1) (F6.1;B2.0) B4.1 (F7.1;B3.0)",
    "F4.0 B0.1 (F4.1;B0.0) (F5.0;B1.1) (F5.1;B1.0) (F6.0;B2.1) (F6.1;B2.0) (F7.0;B3.1) (F7.1;B3.0)",
};

std::string dual_case(int P, int M, int s) {
  return "dualpipe_pairs(stages " + std::to_string(P) + ", micro_batches " + std::to_string(M) + ", stage " +
         std::to_string(s) + ")";
}

}  // namespace

TEST(DualpipePairs, MatchesTheHandWrittenPairsForTwoAndFourStages) {
  for (int s = 0; s < 2; ++s) {
    const std::string got = pairs_text(ex::dualpipe_pairs(2, 4, s));
    DTL_GRADE_EXPECT(got == kDualPipe24[s])
        << dual_case(2, 4, s) << " is\n  " << got << "\nexpected\n  " << kDualPipe24[s];
  }
  for (int s = 0; s < 4; ++s) {
    const std::string got = pairs_text(ex::dualpipe_pairs(4, 8, s));
    DTL_GRADE_EXPECT(got == kDualPipe48[s])
        << dual_case(4, 8, s) << " is\n  " << got << "\nexpected\n  " << kDualPipe48[s];
  }
}

// Between core/theory's warm-up and cool-down, the pairs make DualPipeV's whole list (torch's
// ScheduleDualPipeV order), which the schedule checker runs without deadlock.
TEST(DualpipePairs, CompleteDualPipeVForTwoToSixStagesAndUpTo4PMicroBatches) {
  for (int P = 2; P <= 6; ++P)
    for (int M = 2 * P; M <= 4 * P; M += P) {
      const pipeline::Schedule want =
          pipeline::make_schedule(ScheduleKind::dualpipe_v, pipeline::config_for(ScheduleKind::dualpipe_v, P, M, 2));
      pipeline::Schedule got = want;
      for (int s = 0; s < P; ++s) {
        const std::vector<Action> pairs = ex::dualpipe_pairs(P, M, s);
        std::vector<Action> list = pipeline::dualpipe_v_part(P, M, s, pipeline::DualPipePart::warm_up);
        list.insert(list.end(), pairs.begin(), pairs.end());
        const std::vector<Action> rest = pipeline::dualpipe_v_part(P, M, s, pipeline::DualPipePart::cool_down);
        list.insert(list.end(), rest.begin(), rest.end());
        const std::vector<Action> middle = pipeline::dualpipe_v_part(P, M, s, pipeline::DualPipePart::overlapped);
        DTL_GRADE_EXPECT(list == want.stages[std::size_t(s)])
            << dual_case(P, M, s) << " is\n  " << pairs_text(pairs) << "\nexpected\n  " << pairs_text(middle);
        got.stages[std::size_t(s)] = list;
      }
      std::string problem;
      try {
        pipeline::check_schedule(got);
      } catch (const std::exception& e) { problem = e.what(); }
      DTL_GRADE_EXPECT(problem.empty()) << "DualPipeV with your pairs, P " << P << ", M " << M << ": " << problem;
    }
}
