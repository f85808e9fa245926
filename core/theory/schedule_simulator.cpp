// The pipeline simulator: every stage runs its list in order; an action starts at
// max(stage free, inputs arrived), its inputs being (schedule.h)
//   F(m, vs)  F(m, vs − 1) on its stage, + p2p when that is another stage
//   B(m, vs)  F(m, vs) here, and B(m, vs + 1) + p2p (the last virtual stage: its F only)
//   W(m, vs)  B(m, vs) here
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

double duration(const Action& a, const Schedule& s, const ActionTimes& t) {
  if (s.kind != ScheduleKind::zb_h1) return a.op == Pass::forward ? t.forward : t.backward;
  const double weight = t.weight < 0 ? t.backward / 2 : t.weight;
  if (a.op == Pass::forward) return t.forward;
  if (a.op == Pass::backward) return t.backward - weight;  // input gradient only
  return weight;
}

[[noreturn]] void throw_deadlock(const Schedule& s, const std::vector<size_t>& next, EndTimes& ends) {
  const int P = s.config.stages, V = s.virtual_stages();
  for (int st = 0; st < P; ++st) {
    if (next[st] >= s.stages[st].size()) continue;
    const Action& a = s.stages[st][next[st]];
    const int vs = a.chunk * P + st;
    for (const Input& in : inputs_of(a, vs, V)) {
      if (ends.at(in.op, a.micro_batch, in.vs) != kNotYet) continue;
      throw Error("pipeline schedule " + std::string(schedule_name(s.kind)) + " deadlocks: stage " +
                  std::to_string(st) + " waits at its action #" + std::to_string(next[st]) + " " + describe(a, vs) +
                  " for " + describe(Action{in.op, a.micro_batch, in.vs / P}, in.vs) + " on stage " +
                  std::to_string(in.vs % P) +
                  ", which never runs before it; reorder the stage lists so every input comes first");
    }
  }
  throw Error("pipeline schedule deadlocks with no stage waiting [simulator bug]");
}

// Places stage st's next action if its inputs are placed; returns whether it did.
bool place_next(const Schedule& s, const std::vector<ActionTimes>& times, int st, std::vector<size_t>& next,
                std::vector<double>& free_at, EndTimes& ends, Simulation& sim) {
  const int P = s.config.stages, V = s.virtual_stages();
  const Action& a = s.stages[st][next[st]];
  const ActionTimes& t = times[size_t(st)];
  const int vs = a.chunk * P + st;
  double start = free_at[st];
  for (const Input& in : inputs_of(a, vs, V)) {
    const double end = ends.at(in.op, a.micro_batch, in.vs);
    if (end == kNotYet) return false;
    start = std::max(start, end + (in.vs % P != st ? t.p2p : 0.0));
  }
  const double d = duration(a, s, t);
  double& end = ends.at(a.op, a.micro_batch, vs);
  DTL_CHECK(end == kNotYet, "stage " + std::to_string(st) + " runs " + describe(a, vs) + " twice");
  end = start + d;
  free_at[st] = end;
  sim.busy[st] += d;
  sim.actions.push_back({st, a, start, end});
  ++next[st];
  return true;
}

}  // namespace

double Simulation::bubble_fraction() const {
  if (busy.empty() || makespan <= 0) return 0;
  double idle = 0;
  for (double b : busy) idle += makespan - b;
  return idle / (double(busy.size()) * makespan);
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
  Simulation sim;
  sim.busy.assign(P, 0.0);
  std::vector<size_t> next(P, 0);
  std::vector<double> free_at(P, 0.0);
  size_t remaining = 0;
  for (const auto& list : s.stages) remaining += list.size();
  while (remaining > 0) {
    size_t placed = 0;
    for (int st = 0; st < P; ++st)
      while (next[st] < s.stages[st].size() && place_next(s, t, st, next, free_at, ends, sim)) ++placed;
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

}  // namespace dtl::pipeline
