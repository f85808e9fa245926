// Pipeline schedules as data: for P stages and M micro-batches, each stage's ordered list
// of compute actions. Communication is implied by the model's layout, so a schedule is
// only the order each stage computes in:
//
//   virtual stage  vs = chunk·P + stage     (v chunks per stage: Megatron's interleaving;
//                                            v = 1 for every schedule but interleaved)
//   F(m, vs)  needs the activation of micro-batch m from vs − 1 (none for vs = 0) and
//             sends its output to vs + 1 (none for the last virtual stage, P·v − 1)
//   B(m, vs)  needs F(m, vs) on this stage and the gradient of m from vs + 1 (the last
//             virtual stage starts from the loss), and sends dX to vs − 1.
//             Zero-bubble schedules split it: B computes the input gradient only (what
//             vs − 1 waits for), W(m, vs) the weight gradients, later, filling bubbles.
//
// Schedules (seeds 001–003; Narayanan et al. 2021 for 1F1B and interleaving; Qi et al.
// 2023 for ZB-H1):
//   gpipe        all forwards, then all backwards (AFAB)
//   1f1b         warm-up of P − s − 1 forwards on stage s, then one forward / one backward,
//                then the remaining backwards: at most P − s micro-batches in flight
//   interleaved  1F1B over v chunks per stage; M a multiple of P
//   zb-h1        1F1B's order and memory with B split into B and W, the W's deferred
//
// The simulator runs a schedule with given action times (uniform, or measured) and
// returns the timeline and its bubble: used by the lab, the planner and the tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/vocab.h"

namespace dtl::pipeline {

using ScheduleKind = dtl::ScheduleKind;     // core/trace/vocab.h: the trace's vocabulary names them too
const char* schedule_name(ScheduleKind k);  // "gpipe", "1f1b", "interleaved", "zb-h1"

// An action's op is the trace's Pass (core/trace/vocab.h), one of three: forward F, backward
// B (the input gradient; the full backward unless zb), weight W (pass_letter writes them).
inline bool is_action_pass(Pass p) { return p == Pass::forward || p == Pass::backward || p == Pass::weight; }

struct Action {
  Pass op = Pass::forward;  // forward, backward or weight
  int micro_batch = 0;
  int chunk = 0;  // 0..v-1: the model chunk on this stage (virtual stage chunk·P + stage)
  bool operator==(const Action&) const = default;
};

struct ScheduleConfig {
  int stages = 2;         // P
  int micro_batches = 4;  // M
  int chunks = 1;         // v (interleaved only; 1 otherwise)
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  ScheduleConfig config;
  std::vector<std::vector<Action>> stages;  // stages[s]: stage s's actions in order
  int virtual_stages() const { return config.stages * config.chunks; }
};

// Throws UsageError naming the rule a configuration breaks: P ≥ 1, M ≥ 1; 1F1B and zb-h1
// need M ≥ P (fewer micro-batches than stages leaves stages with nothing to alternate);
// interleaved needs v ≥ 2, P ≥ 2 and M a multiple of P; v = 1 for the others.
void validate(ScheduleKind kind, const ScheduleConfig& c);

// The schedule (validates first).
Schedule make_schedule(ScheduleKind kind, const ScheduleConfig& c);

// Forwards `stage` runs before its first backward, read from the schedule: GPipe M (times
// v), 1F1B and zb-h1 min(M, P − s) — the warm-up P − s − 1 and the first steady-state
// forward —, interleaved its own rule ((P − s − 1)·2 + (v − 1)·P + 1, capped at M·v).
int forwards_before_first_backward(const Schedule& s, int stage);

// The largest number of micro-batch-chunks whose forward has run on `stage` and whose
// backward (zb: weight gradient W) has not yet: the activations the stage holds at once.
int max_in_flight(const Schedule& s, int stage);

// ---- simulator --------------------------------------------------------------------------

// Durations of one action on one virtual stage (any unit; µs in the lab), and the time a
// point-to-point message takes between stages.
struct ActionTimes {
  double forward = 1, backward = 2;
  double weight = -1;  // zb: the W part; default backward / 2, and then B takes backward / 2
  double p2p = 0;
};

struct TimedAction {
  int stage = 0;
  Action action;
  double begin = 0, end = 0;
};

struct Simulation {
  std::vector<TimedAction> actions;  // every action, with its start and end
  double makespan = 0;               // the step: first start to last end
  std::vector<double> busy;          // per stage: time computing
  // Idle share of the whole step, Σ_s (makespan − busy_s) / (P·makespan): the form
  // (P−1)/(M+P−1) predicts for GPipe and 1F1B with uniform times and p2p = 0.
  double bubble_fraction() const;
};

// Runs each stage's actions in order, each as soon as its inputs (above) have arrived.
// Throws Error naming the stage and the action it waits for if the schedule deadlocks.
Simulation simulate(const Schedule& s, const ActionTimes& t);
// The same with each stage's own durations (stages of unequal depth; t[s].p2p is the time a
// message into stage s takes). Used by `dtlab simulate` (labs/simulate/cluster_sim.h).
Simulation simulate(const Schedule& s, const std::vector<ActionTimes>& t);

// The curriculum's two forms of the bubble (seeds 001–003):
//   idle share of the step   (P−1)/(M+P−1)        P = 8, M = 32: 17.9 %
//   relative to compute      (P−1)/M, interleaved (P−1)/(v·M)   P = 8, M = 32: 21.9 %
double bubble_idle_share(int P, int M, int v = 1);
double bubble_vs_compute(int P, int M, int v = 1);

}  // namespace dtl::pipeline
