// The schedules of core/theory/schedule.h as pure functions from (kind, P, M, v) to each
// stage's ordered list of actions. Each builder follows its source's phases:
//   gpipe        all forwards, then all backwards in micro-batch order (GPipe's AFAB, as in
//                torch.distributed.pipelining's ScheduleGPipe)
//   1f1b         Warm-up P − s − 1 forwards / Steady one forward, one backward / Cool-down
//                the remaining backwards (PipeDream-Flush, Narayanan et al. 2021)
//   interleaved  the same three phases over M·v (micro-batch, chunk) pairs, in Megatron's
//                order: groups of P micro-batches, chunk 0 then chunk 1 ... within a group;
//                backwards with the chunks reversed; warm-up 2(P − s − 1) + (v − 1)·P
//   zb-h1        1F1B with B split into B and W (Qi et al. 2023, §2.1): stage s runs its
//                first s steady steps as F B without W, so W lags B by s micro-batches and
//                every stage holds P in flight (1F1B's peak, stage 0's); the s deferred W's
//                run after the last B, where 1F1B's cool-down leaves stage s idle
// The simulator is in schedule_simulator.cpp.
#include "core/theory/schedule.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/theory/schedule_builders.h"

namespace dtl::pipeline {

const char* schedule_name(ScheduleKind k) { return schedule_kind_name(k); }

std::vector<ScheduleKind> builtin_schedules() {
  return {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved,    ScheduleKind::zb_h1,
          ScheduleKind::zb_h2, ScheduleKind::zb_v,        ScheduleKind::interleaved_zb, ScheduleKind::dualpipe_v};
}

int Schedule::virtual_stage(int stage, int chunk) const {
  if (!placed.empty()) return placed.at(std::size_t(stage) * std::size_t(config.chunks) + std::size_t(chunk));
  const int P = config.stages;
  if (config.placement == Placement::vee) return chunk == 0 ? stage : 2 * P - 1 - stage;
  return chunk * P + stage;
}

namespace {
// The index s·v + c of the chunk `placed` puts virtual stage vs on.
int placed_index(const std::vector<int>& placed, int vs) {
  const auto at = std::find(placed.begin(), placed.end(), vs);
  if (at == placed.end())
    throw Error("no chunk of the placement holds virtual stage " + std::to_string(vs) + " [unchecked schedule]");
  return int(at - placed.begin());
}
}  // namespace

int Schedule::stage_of(int vs) const {
  if (!placed.empty()) return placed_index(placed, vs) / config.chunks;
  const int P = config.stages;
  if (config.placement == Placement::vee) return vs < P ? vs : 2 * P - 1 - vs;
  return vs % P;
}

int Schedule::chunk_of(int vs) const {
  if (!placed.empty()) return placed_index(placed, vs) % config.chunks;
  return vs / config.stages;  // both rules
}

bool Schedule::splits_backward(int stage, int m, int chunk) const {
  for (const Action& a : stages.at(std::size_t(stage)))
    if (a.op == Pass::weight && a.micro_batch == m && a.chunk == chunk) return true;
  return false;
}

bool Schedule::has_weight_actions() const {
  for (const auto& list : stages)
    for (const Action& a : list)
      if (a.op == Pass::weight) return true;
  return false;
}

ScheduleConfig config_for(ScheduleKind kind, int stages, int micro_batches, int chunks) {
  const bool vee = kind == ScheduleKind::zb_v || kind == ScheduleKind::dualpipe_v;
  const bool looped = kind == ScheduleKind::interleaved || kind == ScheduleKind::interleaved_zb;
  return {stages, micro_batches, vee ? 2 : looped ? chunks : 1, vee ? Placement::vee : Placement::loop};
}

void validate(ScheduleKind kind, const ScheduleConfig& c) {
  const std::string name = schedule_name(kind);
  const std::string P = std::to_string(c.stages), M = std::to_string(c.micro_batches), v = std::to_string(c.chunks);
  if (c.stages < 1) throw UsageError("a pipeline needs at least one stage (P=" + P + "): raise --stages to 1 or more");
  if (c.micro_batches < 1)
    throw UsageError("a pipeline needs at least one micro-batch (M=" + M + "): raise --micro-batches to 1 or more");
  if (kind == ScheduleKind::csv) return;  // its rules are check_schedule's
  if (kind == ScheduleKind::interleaved || kind == ScheduleKind::interleaved_zb) {
    if (c.chunks < 2)
      throw UsageError(name + " needs at least 2 chunks per stage (v=" + v + "): set --chunks 2 or more, or use 1f1b");
    if (c.stages < 2) throw UsageError(name + " needs at least 2 stages (P=" + P + "): raise --stages, or use gpipe");
    if (c.micro_batches % c.stages != 0) {
      const int up = (c.micro_batches / c.stages + 1) * c.stages;
      throw UsageError(name + " needs M a multiple of P (M=" + M + ", P=" + P + "): set --micro-batches to " +
                       std::to_string(up) + " or another multiple of " + P);
    }
    return;
  }
  const bool vee = kind == ScheduleKind::zb_v || kind == ScheduleKind::dualpipe_v;
  if (vee && c.chunks != 2)
    throw UsageError(name + " folds the model into a V of 2 chunks per stage (v=" + v + "): drop --chunks");
  if (!vee && c.chunks != 1)
    throw UsageError(name + " runs one chunk per stage (v=" + v + "): drop --chunks, or use interleaved");
  const bool dual = kind == ScheduleKind::dualpipe_v;
  const int least = dual ? 2 * c.stages : kind == ScheduleKind::gpipe ? 1 : c.stages;
  if (c.micro_batches < least)
    throw UsageError(name + " needs at least as many micro-batches as " + (dual ? "virtual stages" : "stages") +
                     " (M=" + M + " < " + (dual ? "2P=" : "P=") + std::to_string(least) +
                     "): raise --micro-batches to " + std::to_string(least) + " or more" +
                     (dual ? "" : ", or use gpipe"));
}

namespace {

Action F(int m, int chunk = 0) { return {Pass::forward, m, chunk, false}; }
Action B(int m, int chunk = 0) { return {Pass::backward, m, chunk, false}; }

std::vector<Action> gpipe_stage(int M) {
  std::vector<Action> a;
  a.reserve(2 * std::size_t(M));
  for (int m = 0; m < M; ++m) a.push_back(F(m));
  for (int m = 0; m < M; ++m) a.push_back(B(m));
  return a;
}

std::vector<Action> one_f_one_b_stage(int P, int M, int s) {
  std::vector<Action> a;
  const int warmup = std::min(P - s - 1, M);
  int f = 0, b = 0;
  while (f < warmup) a.push_back(F(f++));  // Warm-up
  while (f < M) {                          // Steady: one forward, one backward
    a.push_back(F(f++));
    a.push_back(B(b++));
  }
  while (b < M) a.push_back(B(b++));  // Cool-down
  return a;
}

// zb-h1: 1F1B's order with W lagging B by s micro-batches on stage s, so every stage holds
// P in flight (1F1B's peak, stage 0's) and the s deferred W's fill the cool-down.
std::vector<Action> zb_h1_stage(int P, int M, int s) { return detail::split_backward(one_f_one_b_stage(P, M, s), s); }

// Megatron's order of the k-th (micro-batch, chunk) on a stage: groups of P micro-batches,
// within a group all of chunk 0, then chunk 1, ...; backwards walk the chunks last-first.
Action interleaved_action(int k, int P, int v, bool forward) {
  const int group = k / (P * v), in_group = k % (P * v);
  const int chunk = in_group / P, m = group * P + in_group % P;
  return forward ? F(m, chunk) : B(m, v - 1 - chunk);
}

}  // namespace

std::vector<Action> detail::interleaved_stage(int P, int M, int v, int s) {
  const int total = M * v;
  const int warmup = std::min(2 * (P - s - 1) + (v - 1) * P, total);
  std::vector<Action> a;
  int f = 0, b = 0;
  while (f < warmup) a.push_back(interleaved_action(f++, P, v, true));  // Warm-up
  while (f < total) {                                                   // Steady
    a.push_back(interleaved_action(f++, P, v, true));
    a.push_back(interleaved_action(b++, P, v, false));
  }
  while (b < total) a.push_back(interleaved_action(b++, P, v, false));  // Cool-down
  return a;
}

Schedule make_schedule(ScheduleKind kind, const ScheduleConfig& given) {
  validate(kind, given);
  const ScheduleConfig c = config_for(kind, given.stages, given.micro_batches, given.chunks);
  Schedule sch;
  sch.kind = kind;
  sch.config = c;
  const int P = c.stages, M = c.micro_batches;
  for (int s = 0; s < P; ++s) {
    switch (kind) {
      case ScheduleKind::gpipe: sch.stages.push_back(gpipe_stage(M)); break;
      case ScheduleKind::one_f_one_b: sch.stages.push_back(one_f_one_b_stage(P, M, s)); break;
      case ScheduleKind::interleaved: sch.stages.push_back(detail::interleaved_stage(P, M, c.chunks, s)); break;
      case ScheduleKind::zb_h1: sch.stages.push_back(zb_h1_stage(P, M, s)); break;
      case ScheduleKind::zb_h2: sch.stages.push_back(detail::zb_h2_stage(P, M, s)); break;
      case ScheduleKind::zb_v: sch.stages.push_back(detail::zb_v_stage(P, M, s)); break;
      case ScheduleKind::interleaved_zb: sch.stages.push_back(detail::interleaved_zb_stage(P, M, c.chunks, s)); break;
      case ScheduleKind::dualpipe_v: sch.stages.push_back(detail::dualpipe_v_stage(P, M, s)); break;
      case ScheduleKind::csv: throw UsageError("a csv schedule is read from its file (--schedule-csv), not built");
    }
  }
  return sch;
}

int forwards_before_first_backward(const Schedule& s, int stage) {
  int n = 0;
  for (const Action& a : s.stages.at(stage)) {
    if (a.op != Pass::forward) break;
    ++n;
  }
  return n;
}

int max_in_flight(const Schedule& s, int stage) {
  // A micro-batch-chunk holds activations from its F until the pass that last reads them:
  // B, or W where the backward is split (W needs the layer inputs too).
  int held = 0, most = 0;
  for (const Action& a : s.stages.at(std::size_t(stage))) {
    if (a.op == Pass::forward) most = std::max(most, ++held);
    if (a.op == Pass::weight || (a.op == Pass::backward && !s.splits_backward(stage, a.micro_batch, a.chunk))) --held;
  }
  return most;
}

double bubble_idle_share(int P, int M, int v) { return double(P - 1) / (double(v) * M + P - 1); }
double bubble_vs_compute(int P, int M, int v) { return double(P - 1) / (double(v) * M); }

}  // namespace dtl::pipeline
