// Pipeline schedules as data: for P stages (ranks) and M micro-batches, each stage's
// ordered list of compute actions. Communication is implied by the model's layout, so a
// schedule is only the order each stage computes in:
//
//   virtual stage vs of (stage s, chunk c): v chunks per stage, placed
//     loop  vs = c·P + s          (Megatron's interleaving; v = 1 for the plain schedules)
//     V     vs = s for c = 0, 2P − 1 − s for c = 1   (zb-v, dualpipev: the model folds back,
//                                   so stage 0 holds the first and the last virtual stage)
//   F(m, vs)  needs the activation of micro-batch m from vs − 1 (none for vs = 0) and
//             sends its output to vs + 1 (none for the last virtual stage, P·v − 1)
//   B(m, vs)  needs F(m, vs) on this stage and the gradient of m from vs + 1 (the last
//             virtual stage starts from the loss), and sends dX to vs − 1.
//             Zero-bubble schedules split it: where the stage's list also holds W(m, vs), B
//             computes the input gradient only (torch's "I", what vs − 1 waits for) and
//             W(m, vs) the weight gradients later, filling bubbles; otherwise B is the full
//             backward (torch's "B").
//   pair      an F and the B right after it marked `with_next` run together (DualPipe's
//             overlapped F&B: one micro-batch's forward beside another's backward, so the
//             one's communication hides behind the other's compute): both inputs first.
//
// Schedules (seeds 001–003; Narayanan et al. 2021 for 1F1B and interleaving; Qi et al.
// 2023 "Zero Bubble Pipeline Parallelism" for ZB-H1, ZB-H2, ZB-V; DeepSeek-V3 and Sea AI
// Lab's cut-in-half for DualPipeV — their orders as torch.distributed.pipelining builds them):
//   gpipe           all forwards, then all backwards (AFAB)
//   1f1b            warm-up of P − s − 1 forwards on stage s, then one forward / one
//                   backward, then the remaining backwards: at most P − s in flight
//   interleaved     1F1B over v chunks per stage; M a multiple of P
//   zb-h1           1F1B's order and memory with B split into B and W, the W's deferred
//   zb-h2           zb-h1 with P − s − 1 more warm-up forwards (2P − 1 in flight on stage
//                   0): the F's fill the warm-up bubble, the W's the cool-down
//   zb-v            V placement, 2 chunks, B/W split: 1F1B's memory, ~0 bubble
//   interleaved-zb  interleaved with B split into B and W, W deferred as in zb-h1
//   dualpipev       V placement, 2 chunks, overlapped F&B pairs in its steady state
//
// The simulator runs a schedule with given action times (uniform, or measured) and
// returns the timeline and its bubble: used by the lab, the planner and the tests.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/trace/vocab.h"

namespace dtl::pipeline {

using ScheduleKind = dtl::ScheduleKind;     // core/trace/vocab.h: the trace's vocabulary names them too
const char* schedule_name(ScheduleKind k);  // "gpipe", "1f1b", "interleaved", "zb-h1", ... "csv"
// The built-in schedules (every kind but csv), in the order the lab's --schedule all runs them.
std::vector<ScheduleKind> builtin_schedules();

// An action's op is the trace's Pass (core/trace/vocab.h), one of three: forward F, backward
// B (the input gradient; the full backward unless zb), weight W (pass_letter writes them).
inline bool is_action_pass(Pass p) { return p == Pass::forward || p == Pass::backward || p == Pass::weight; }

struct Action {
  Pass op = Pass::forward;  // forward, backward or weight
  int micro_batch = 0;
  int chunk = 0;           // 0..v-1: the model chunk on this stage (its virtual stage: Schedule)
  bool with_next = false;  // an F that runs together with the B after it (an overlapped pair)
  bool operator==(const Action&) const = default;
};

// Where a stage's chunks sit in the model (the header's table).
enum class Placement : std::uint8_t { loop, vee };

struct ScheduleConfig {
  int stages = 2;         // P
  int micro_batches = 4;  // M
  int chunks = 1;         // v (interleaved: 2 or more; zb-v and dualpipev: 2; 1 otherwise)
  Placement placement = Placement::loop;
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  ScheduleConfig config;
  std::vector<std::vector<Action>> stages;  // stages[s]: stage s's actions in order
  // A placement given as a table, in place of config.placement's rule: placed[s·v + c] is the
  // virtual stage of chunk c of stage s (the pipeline lab's V from the learner's vee_stage);
  // empty: the rule. check_schedule checks that it puts each virtual stage on one chunk.
  std::vector<int> placed;
  int virtual_stages() const { return config.stages * config.chunks; }
  int virtual_stage(int stage, int chunk) const;  // the header's placement (or placed's)
  int stage_of(int vs) const;
  int chunk_of(int vs) const;
  // Whether stage's B of (m, chunk) is the input gradient only: its list also holds W(m, chunk).
  bool splits_backward(int stage, int m, int chunk) const;
  bool has_weight_actions() const;  // any W anywhere (a zero-bubble split)
};

// Throws UsageError naming the rule a configuration breaks: P ≥ 1, M ≥ 1; 1F1B and zb-h1
// need M ≥ P (fewer micro-batches than stages leaves stages with nothing to alternate);
// interleaved needs v ≥ 2, P ≥ 2 and M a multiple of P; v = 1 for the others.
// zb-h2 and interleaved-zb as 1f1b and interleaved; zb-v v = 2 and M ≥ P; dualpipev v = 2,
// M ≥ 2P (torch's rule: at least as many micro-batches as virtual stages).
void validate(ScheduleKind kind, const ScheduleConfig& c);
// The configuration a kind runs with: v = 2 and V placement for zb-v and dualpipev.
ScheduleConfig config_for(ScheduleKind kind, int stages, int micro_batches, int chunks);

// Checks any schedule (a built-in one, or one read from a file) before it runs, throwing
// UsageError naming the stage, the action and the rule: every (micro-batch, chunk) of every
// stage has one F and one B, at most one W, F before B before W; a pair is an F marked
// with_next followed by a B of another micro-batch or chunk; and the simulator finds no
// deadlock (schedule_check.cpp). `where(stage, index)` words an action's place for the
// message (default "stage 2, action #5"; the CSV reader names its row and cell).
using ActionPlace = std::function<std::string(int stage, std::size_t index)>;
void check_schedule(const Schedule& s, const ActionPlace& where = {});

// The schedule (validates first).
Schedule make_schedule(ScheduleKind kind, const ScheduleConfig& c);

// DualPipeV's eight steps (schedule_zero_bubble.cpp) in three parts, whose concatenation is
// make_schedule's dualpipev list of stage s: the warm-up (steps 1–3: chunk 0 down the V, both
// chunks, B1 W1 F1), the overlapped steps (4–5: the F&B pairs, what the learner's
// dualpipe_pairs writes) and the cool-down (6–8: B1 B0, W B0, the W's left).
enum class DualPipePart : std::uint8_t { warm_up, overlapped, cool_down };
std::vector<Action> dualpipe_v_part(int P, int M, int s, DualPipePart part);

// Forwards `stage` runs before its first backward, read from the schedule: GPipe M (times
// v), 1F1B and zb-h1 min(M, P − s) — the warm-up P − s − 1 and the first steady-state
// forward —, interleaved its own rule ((P − s − 1)·2 + (v − 1)·P + 1, capped at M·v).
int forwards_before_first_backward(const Schedule& s, int stage);

// The largest number of micro-batch-chunks whose forward has run on `stage` and whose
// backward (zb: weight gradient W) has not yet: the activations the stage holds at once.
int max_in_flight(const Schedule& s, int stage);

// The published bound on the same count, in chunks (schedule_formulas.cpp has the sources);
// compared with max_in_flight by the tests and the lab.
int published_in_flight(ScheduleKind kind, const ScheduleConfig& c, int stage);

// ---- simulator --------------------------------------------------------------------------

// Durations of one action on one virtual stage (any unit; µs in the lab), and the time a
// point-to-point message takes between stages.
struct ActionTimes {
  double forward = 1, backward = 2;  // backward: the full backward (B + W where it is split)
  double weight = -1;                // zb: the W part; default backward / 2, and then B takes backward / 2
  double p2p = 0;
  double weight_part() const { return weight < 0 ? backward / 2 : weight; }
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
  // Idle share when each stage starts its next step as soon as it finished this one (no
  // barrier between steps: Qi et al.'s post-validation): 1 − Σ busy / (P · the longest
  // stage's own span, first start to last end). Equal to bubble_fraction when one stage
  // spans the whole step (gpipe, 1f1b, interleaved); zb-h2 and zb-v hide their fill there.
  double bubble_tiled() const;
};

// Per chunk of `stage` (v of them), the action after which that chunk's gradients are final: its
// last-ending backward or weight action (a W follows its own B, so the last of them is a W or an
// unsplit B). Where a data-parallel reduction can start (null: the chunk has no action).
std::vector<const TimedAction*> last_gradient_actions(const Simulation& sim, int stage, int chunks);

// A schedule no order of execution can finish: `stage` waits at its action #`index` forever.
class ScheduleDeadlock : public Error {
 public:
  ScheduleDeadlock(const std::string& what, int stage, std::size_t index) : Error(what), stage(stage), index(index) {}
  int stage;
  std::size_t index;
};

// Runs each stage's actions in order, each as soon as its inputs (above) have arrived.
// Throws ScheduleDeadlock naming the stage and the action it waits for if the schedule deadlocks.
Simulation simulate(const Schedule& s, const ActionTimes& t);
// The same with each stage's own durations (stages of unequal depth; t[s].p2p is the time a
// message into stage s takes). Used by `dtlab simulate` (labs/simulate/cluster_sim.h).
Simulation simulate(const Schedule& s, const std::vector<ActionTimes>& t);

// The curriculum's two forms of the bubble (seeds 001–003):
//   idle share of the step   (P−1)/(M+P−1)        P = 8, M = 32: 17.9 %
//   relative to compute      (P−1)/M, interleaved (P−1)/(v·M)   P = 8, M = 32: 21.9 %
double bubble_idle_share(int P, int M, int v = 1);
double bubble_vs_compute(int P, int M, int v = 1);

// Each schedule's published bubble as an idle share of the step, with per-stage action times
// t (F, full B, W of one stage's whole model; a chunk takes 1/v): the idle time per stage of
// the source's formula, over the stage's work plus that idle. `formula` names it.
struct PublishedBubble {
  double idle_share = 0;
  const char* formula = "";
  bool tiled = false;   // in bubble_tiled's convention (zb-h2, zb-v: Qi et al.'s post-validation)
  bool applies = true;  // false: the source states no formula for this M (zb-h2, zb-v: M < 2P − 1)
};
PublishedBubble published_bubble(ScheduleKind kind, const ScheduleConfig& c, const ActionTimes& t);

}  // namespace dtl::pipeline
