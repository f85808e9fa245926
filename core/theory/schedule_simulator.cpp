// The pipeline simulator: every stage runs its list in order; an action starts at
// max(stage free, inputs arrived), its inputs being (schedule.h)
//   F(m, vs)  F(m, vs − 1) on its stage, + p2p when that is another stage
//   B(m, vs)  F(m, vs) here, and B(m, vs + 1) + p2p (the last virtual stage: its F only)
//   W(m, vs)  B(m, vs) here
// A B lasts the full backward, or backward − weight where the stage also lists its W. An
// overlapped pair (F marked with_next, then a B) starts when both inputs are in, and its F
// then its B run back to back: one device computes both (DualPipe overlaps the one's
// communication with the other's compute, which p2p = 0 leaves out).
// Start times depend only on actions already placed, so placing each stage's next action
// as soon as its inputs are placed gives the one timeline, whatever order the stages are
// visited in. A sweep that places nothing while actions remain is a deadlock.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/theory/schedule.h"

namespace dtl::pipeline {

namespace {

constexpr double kNotYet = -1;

// End times of every (op, micro-batch, virtual stage), kNotYet until placed.
class EndTimes {
 public:
  EndTimes(int M, int V) : M_(M), V_(V), end_(3 * size_t(M) * V, kNotYet) {}
  // F, B and W have a block each (simulate checks every action is one of them).
  static size_t slot(Pass op) { return op == Pass::forward ? 0 : op == Pass::backward ? 1 : 2; }
  double& at(Pass op, int m, int vs) { return end_[(slot(op) * M_ + m) * V_ + vs]; }

 private:
  int M_, V_;
  std::vector<double> end_;
};

struct Input {
  Pass op;
  int vs;  // virtual stage it runs on; -1: none
};

// The inputs of `a` on virtual stage vs (at most two), per the table above.
std::vector<Input> inputs_of(const Action& a, int vs, int V) {
  if (a.op == Pass::forward) return vs > 0 ? std::vector<Input>{{Pass::forward, vs - 1}} : std::vector<Input>{};
  if (a.op == Pass::backward) {
    if (vs + 1 < V) return {{Pass::forward, vs}, {Pass::backward, vs + 1}};
    return {{Pass::forward, vs}};
  }
  return {{Pass::backward, vs}};  // weight
}

std::string describe(const Action& a, int vs) {
  return std::string(pass_letter(a.op)) + "(micro-batch " + std::to_string(a.micro_batch) + ", virtual stage " +
         std::to_string(vs) + ")";
}

// Per stage, whether each (micro-batch, chunk) has a W on that stage (its B is then split).
using SplitTable = std::vector<std::vector<char>>;
SplitTable split_table(const Schedule& s) {
  SplitTable t(s.stages.size(), std::vector<char>(size_t(s.config.micro_batches) * s.config.chunks, 0));
  for (size_t st = 0; st < s.stages.size(); ++st)
    for (const Action& a : s.stages[st])
      if (a.op == Pass::weight) t[st][size_t(a.micro_batch) * s.config.chunks + a.chunk] = 1;
  return t;
}

double duration(const Action& a, bool split, const ActionTimes& t) {
  if (a.op == Pass::forward) return t.forward;
  if (a.op == Pass::weight) return t.weight_part();
  return split ? t.backward - t.weight_part() : t.backward;  // input gradient only, or the whole
}

[[noreturn]] void throw_deadlock(const Schedule& s, const std::vector<size_t>& next, EndTimes& ends) {
  const int P = s.config.stages, V = s.virtual_stages();
  for (int st = 0; st < P; ++st) {
    if (next[st] >= s.stages[st].size()) continue;
    const Action& a = s.stages[st][next[st]];
    const int vs = s.virtual_stage(st, a.chunk);
    for (const Input& in : inputs_of(a, vs, V)) {
      if (ends.at(in.op, a.micro_batch, in.vs) != kNotYet) continue;
      throw ScheduleDeadlock("pipeline schedule " + std::string(schedule_name(s.kind)) + " deadlocks: stage " +
                                 std::to_string(st) + " waits at its action #" + std::to_string(next[st]) + " " +
                                 describe(a, vs) + " for " +
                                 describe(Action{in.op, a.micro_batch, s.chunk_of(in.vs)}, in.vs) + " on stage " +
                                 std::to_string(s.stage_of(in.vs)) +
                                 ", which never runs before it; reorder the stage lists so every input comes first",
                             st, next[st]);
    }
  }
  throw Error("pipeline schedule deadlocks with no stage waiting [simulator bug]");
}

// The earliest start of `a` on stage st given its inputs' ends, or kNotYet while one is missing.
double ready_at(const Schedule& s, const ActionTimes& t, int st, const Action& a, EndTimes& ends) {
  const int vs = s.virtual_stage(st, a.chunk);
  double start = 0;
  for (const Input& in : inputs_of(a, vs, s.virtual_stages())) {
    const double end = ends.at(in.op, a.micro_batch, in.vs);
    if (end == kNotYet) return kNotYet;
    start = std::max(start, end + (s.stage_of(in.vs) != st ? t.p2p : 0.0));
  }
  return start;
}

void place(const Schedule& s, const SplitTable& split, const ActionTimes& t, int st, const Action& a, double start,
           EndTimes& ends, Simulation& sim) {
  const int vs = s.virtual_stage(st, a.chunk);
  const double d = duration(a, split[size_t(st)][size_t(a.micro_batch) * s.config.chunks + a.chunk] != 0, t);
  double& end = ends.at(a.op, a.micro_batch, vs);
  DTL_CHECK(end == kNotYet, "stage " + std::to_string(st) + " runs " + describe(a, vs) + " twice");
  end = start + d;
  sim.busy[size_t(st)] += d;
  sim.actions.push_back({st, a, start, end});
}

// Places stage st's next action (an overlapped pair: both) if its inputs are placed.
bool place_next(const Schedule& s, const SplitTable& split, const std::vector<ActionTimes>& times, int st,
                std::vector<size_t>& next, std::vector<double>& free_at, EndTimes& ends, Simulation& sim) {
  const std::vector<Action>& list = s.stages[size_t(st)];
  const ActionTimes& t = times[size_t(st)];
  const Action& a = list[next[st]];
  const bool pair = a.with_next && next[st] + 1 < list.size();
  double start = ready_at(s, t, st, a, ends);
  if (start == kNotYet) return false;
  if (pair) {
    const double second = ready_at(s, t, st, list[next[st] + 1], ends);
    if (second == kNotYet) return false;
    start = std::max(start, second);
  }
  start = std::max(start, free_at[st]);
  place(s, split, t, st, a, start, ends, sim);
  if (pair) place(s, split, t, st, list[next[st] + 1], sim.actions.back().end, ends, sim);
  free_at[st] = sim.actions.back().end;
  next[st] += pair ? 2 : 1;
  return true;
}

}  // namespace

double Simulation::bubble_fraction() const {
  if (busy.empty() || makespan <= 0) return 0;
  double idle = 0;
  for (double b : busy) idle += makespan - b;
  return idle / (double(busy.size()) * makespan);
}

double Simulation::bubble_tiled() const {
  std::vector<double> first(busy.size(), std::numeric_limits<double>::infinity()), last(busy.size(), 0);
  for (const TimedAction& a : actions) {
    first[size_t(a.stage)] = std::min(first[size_t(a.stage)], a.begin);
    last[size_t(a.stage)] = std::max(last[size_t(a.stage)], a.end);
  }
  double period = 0, work = 0;
  for (size_t st = 0; st < busy.size(); ++st) {
    if (last[st] > first[st]) period = std::max(period, last[st] - first[st]);
    work += busy[st];
  }
  return period > 0 ? 1 - work / (double(busy.size()) * period) : 0;
}

Simulation simulate(const Schedule& s, const ActionTimes& t) {
  return simulate(s, std::vector<ActionTimes>(size_t(s.config.stages), t));
}

Simulation simulate(const Schedule& s, const std::vector<ActionTimes>& t) {
  const int P = s.config.stages;
  DTL_CHECK(int(t.size()) == P,
            "simulate needs one ActionTimes per stage: " + std::to_string(t.size()) + " for P=" + std::to_string(P));
  DTL_CHECK(int(s.stages.size()) == P,
            "schedule has " + std::to_string(s.stages.size()) + " stage lists for P=" + std::to_string(P));
  for (int st = 0; st < P; ++st)
    for (const Action& a : s.stages[st]) {
      DTL_CHECK(is_action_pass(a.op), "stage " + std::to_string(st) + " lists a " + pass_name(a.op) +
                                          " action; a schedule's are forward, backward and weight (F, B, W)");
      DTL_CHECK(
          a.micro_batch >= 0 && a.micro_batch < s.config.micro_batches && a.chunk >= 0 && a.chunk < s.config.chunks,
          "stage " + std::to_string(st) + " lists " + pass_letter(a.op) + " of micro-batch " +
              std::to_string(a.micro_batch) + " chunk " + std::to_string(a.chunk) + ", outside the schedule's M and v");
    }
  EndTimes ends(s.config.micro_batches, s.virtual_stages());
  const SplitTable split = split_table(s);
  Simulation sim;
  sim.busy.assign(P, 0.0);
  std::vector<size_t> next(P, 0);
  std::vector<double> free_at(P, 0.0);
  size_t remaining = 0;
  for (const auto& list : s.stages) remaining += list.size();
  while (remaining > 0) {
    size_t placed = 0;
    for (int st = 0; st < P; ++st)
      while (next[st] < s.stages[st].size()) {
        const size_t before = next[st];
        if (!place_next(s, split, t, st, next, free_at, ends, sim)) break;
        placed += next[st] - before;
      }
    if (placed == 0) throw_deadlock(s, next, ends);
    remaining -= placed;
  }
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const TimedAction& a : sim.actions) {
    first = std::min(first, a.begin);
    last = std::max(last, a.end);
  }
  sim.makespan = sim.actions.empty() ? 0 : last - first;
  std::stable_sort(sim.actions.begin(), sim.actions.end(),
                   [](const TimedAction& x, const TimedAction& y) { return x.begin < y.begin; });
  return sim;
}

std::vector<const TimedAction*> last_gradient_actions(const Simulation& sim, int stage, int chunks) {
  std::vector<const TimedAction*> last(std::size_t(chunks), nullptr);
  for (const TimedAction& a : sim.actions)
    if (a.stage == stage && (a.action.op == Pass::backward || a.action.op == Pass::weight)) {
      const TimedAction*& l = last.at(std::size_t(a.action.chunk));
      if (!l || a.end >= l->end) l = &a;
    }
  return last;
}

}  // namespace dtl::pipeline
