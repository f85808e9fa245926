// The zero-bubble family and DualPipeV as per-stage lists (core/theory/schedule.h), each
// following its source's phases; every list is checked by the simulator in the tests.
//   zb-h2           Qi et al. 2023 §3 (ZB-H2): more forwards in the warm-up (up to 2P − 1 in
//                   flight) fill the bubble before the first B, and the deferred W's the
//                   cool-down: with T_F = T_B = T_W every stage computes without a gap from
//                   its first action to its last, a parallelogram whose offsets between
//                   stages are hidden when the next step starts without a barrier (their
//                   "post-validation"). Laid out greedily in unit steps.
//   zb-v            Qi et al. 2023 §4 (ZB-V), in the order torch.distributed.pipelining's
//                   ScheduleZBVZeroBubble builds: 2(P − s) − 1 forwards of chunk 0, s pairs
//                   F1 F0, P − s rounds F1 B1 W1, then F0 B0 W0 F1 B1 W1 rounds, a cool-down of
//                   B0 B1 and B0 W0, and the remaining W's; built for max(M, 2P − 1)
//                   micro-batches and the ones beyond M dropped, as torch does.
//   interleaved-zb  Megatron's interleaved order with every B split and W deferred as in zb-h1
//                   (lag s on stage s).
//   dualpipev       DeepSeek's DualPipeV (the cut-in-half DualPipe of Sea AI Lab), in the
//                   eight steps of its reference and of torch's ScheduleDualPipeV: F0 / F0 F1 /
//                   B1 W1 F1 / (F0;B1)(F1;B0) overlapped pairs / B1 (F1;B0) / B1 B0 (the later
//                   half input-gradient only) / W B0 / W.
#include <algorithm>
#include <deque>
#include <utility>

#include "core/error.h"
#include "core/theory/schedule_builders.h"

namespace dtl::pipeline::detail {

namespace {

Action act(Pass op, int m, int chunk) { return {op, m, chunk, false}; }

}  // namespace

std::vector<Action> split_backward(const std::vector<Action>& list, int lag) {
  std::vector<Action> out;
  std::deque<Action> pending;  // B's whose W has not run, oldest first
  for (const Action& a : list) {
    out.push_back(a);
    if (a.op != Pass::backward) continue;
    pending.push_back(act(Pass::weight, a.micro_batch, a.chunk));
    while (int(pending.size()) > lag) {
      out.push_back(pending.front());
      pending.pop_front();
    }
  }
  out.insert(out.end(), pending.begin(), pending.end());  // the deferred W's fill the tail
  return out;
}

namespace {

// One stage's state while zb-h2 is laid out in unit time steps.
struct GreedyStage {
  std::vector<int> f_end, b_end;  // per micro-batch: the step its F / B ends (kNever: not yet)
  int next_f = 0, next_b = 0, held = 0;
  std::deque<int> pending;  // micro-batches whose B ran and W has not
  std::vector<Action> list;
};
constexpr int kNever = 1 << 30;

// The action stage s starts at step t: B if its gradient is in, else F if its input is in and
// fewer than `cap` micro-batches hold activations, else the oldest pending W (else none).
bool start_one(std::vector<GreedyStage>& st, int s, int t, int M, int cap) {
  GreedyStage& g = st[std::size_t(s)];
  const int P = int(st.size()), b = g.next_b, f = g.next_f;
  if (b < M && g.f_end[std::size_t(b)] <= t && (s == P - 1 || st[std::size_t(s) + 1].b_end[std::size_t(b)] <= t)) {
    g.list.push_back(act(Pass::backward, b, 0));
    g.b_end[std::size_t(b)] = t + 1;
    g.pending.push_back(b);
    ++g.next_b;
  } else if (f < M && g.held < cap && (s == 0 || st[std::size_t(s) - 1].f_end[std::size_t(f)] <= t)) {
    g.list.push_back(act(Pass::forward, f, 0));
    g.f_end[std::size_t(f)] = t + 1;
    ++g.held;
    ++g.next_f;
  } else if (!g.pending.empty()) {
    g.list.push_back(act(Pass::weight, g.pending.front(), 0));
    g.pending.pop_front();
    --g.held;
  } else {
    return false;
  }
  return true;
}

}  // namespace

// zb-h2 laid out greedily with T_F = T_B = T_W (Qi et al.'s own schedules come from such a
// heuristic): B first, then F while the stage holds fewer than 2P − 1 micro-batches (the
// paper's (2p − 1)·M_B peak), then W to fill.
std::vector<Action> zb_h2_stage(int P, int M, int s) {
  std::vector<GreedyStage> st(
      std::size_t(P),
      GreedyStage{std::vector<int>(std::size_t(M), kNever), std::vector<int>(std::size_t(M), kNever), 0, 0, 0, {}, {}});
  long left = 3L * M * P;
  for (int t = 0; left > 0; ++t) {
    if (t > 3 * M * P + 4 * P) throw Error("zb-h2's layout does not finish [schedule bug]");
    for (int k = 0; k < P; ++k)
      if (start_one(st, k, t, M, 2 * P - 1)) --left;
  }
  return st[std::size_t(s)].list;
}

namespace {

// A stage's counters over its two chunks while a V schedule is written.
struct VeeWriter {
  int M;  // micro-batches kept: actions of later ones are dropped (zb-v's padding)
  std::vector<Action> out;
  int f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
  void push(Action a) {
    if (a.micro_batch < M) out.push_back(a);
  }
  void F(int c) { push(act(Pass::forward, f[c]++, c)); }
  void B(int c) { push(act(Pass::backward, b[c]++, c)); }
  void W(int c) { push(act(Pass::weight, w[c]++, c)); }
};

}  // namespace

std::vector<Action> zb_v_stage(int P, int M, int s) {
  const int n = std::max(M, 2 * P - 1);  // enough micro-batches to fill the V
  VeeWriter v{M, {}};
  for (int i = 0; i < 2 * (P - s) - 1; ++i) v.F(0);  // Warm-up: chunk 0 fills the way down
  for (int i = 0; i < s; ++i) {                      //   both chunks
    v.F(1);
    v.F(0);
  }
  for (int i = 0; i < P - s; ++i) {
    v.F(1);
    v.B(1);
    v.W(1);
  }
  while (v.f[1] < v.f[0] || v.f[0] < n) {  // Steady: F0 B0 W0 F1 B1 W1
    if (v.f[0] < n) v.F(0);
    v.B(0);
    v.W(0);
    v.F(1);
    v.B(1);
    v.W(1);
  }
  for (int i = 0; i < s; ++i) {  // Cool-down: input gradients first,
    v.B(0);
    v.B(1);
  }
  for (int i = 0; i < P - s; ++i) {
    v.B(0);
    v.W(0);
  }
  while (v.w[1] < v.b[1]) v.W(1);  // the W's they deferred last
  while (v.w[0] < v.b[0]) v.W(0);
  return v.out;
}

std::vector<Action> interleaved_zb_stage(int P, int M, int v, int s) {
  return split_backward(interleaved_stage(P, M, v, s), s);
}

namespace {

// DualPipeV's writer: B's are full unless split, a split one queues its W.
struct DualWriter {
  std::vector<Action> out;
  int f[2] = {0, 0}, b[2] = {0, 0};
  std::deque<Action> weights;
  void F(int c) { out.push_back(act(Pass::forward, f[c]++, c)); }
  void B(int c, bool split) {
    if (split) weights.push_back(act(Pass::weight, b[c], c));
    out.push_back(act(Pass::backward, b[c]++, c));
  }
  void W() {
    if (weights.empty()) return;
    out.push_back(weights.front());
    weights.pop_front();
  }
  void pair(int forward_chunk, int backward_chunk) {  // an overlapped F&B: F marked with_next
    out.push_back({Pass::forward, f[forward_chunk]++, forward_chunk, true});
    B(backward_chunk, false);
  }
};

}  // namespace

namespace {

// Steps 1–3: chunk 0 down the V, both chunks, then B1 W1 F1 (zero bubble).
void dualpipe_v_warm_up(DualWriter& d, int P, int s) {
  for (int i = 0; i < 2 * (P - s - 1); ++i) d.F(0);  // 1: chunk 0 down the V
  for (int i = 0; i < s + 1; ++i) {                  // 2: both chunks
    d.F(0);
    d.F(1);
  }
  for (int i = 0; i < P - s - 1; ++i) {  // 3: B1 W1 F1 (zero bubble)
    d.B(1, true);
    d.W();
    d.F(1);
  }
}

// Steps 4–5: the overlapped F&B pairs, each F beside the next B of the other chunk.
void dualpipe_v_overlapped(DualWriter& d, int P, int M, int s) {
  for (int i = 0; i < M - 2 * P + s + 1; ++i) {  // 4: the main step, two overlapped pairs
    if (i == 0 && s == P - 1) {                  //    (the last stage's first pair is not
      d.F(0);                                    //     overlapped: its B1 waits for a gradient
      d.B(1, false);                             //     back from the whole V, its F0 need not)
    } else {
      d.pair(0, 1);
    }
    d.pair(1, 0);
  }
  for (int i = 0; i < P - s - 1; ++i) {  // 5: B1 (F1;B0)
    d.B(1, false);
    d.pair(1, 0);
  }
}

// Steps 6–8: the backwards left, the later half of them split, and their W's.
void dualpipe_v_cool_down(DualWriter& d, int P, int s) {
  bool split = false;  // 6: B1 B0, the later half split
  for (int i = 0; i < s + 1; ++i) {
    if (i == (s + 1) / 2 && s % 2 == 1) split = true;
    d.B(1, split);
    if (i == (s + 1) / 2 && s % 2 == 0) split = true;
    d.B(0, split);
  }
  for (int i = 0; i < P - s - 1; ++i) {  // 7: W B0
    d.W();
    d.B(0, split);
  }
  while (!d.weights.empty()) d.W();  // 8: the W's left
}

}  // namespace

std::vector<Action> dualpipe_v_stage(int P, int M, int s) {
  DualWriter d;
  dualpipe_v_warm_up(d, P, s);
  dualpipe_v_overlapped(d, P, M, s);
  dualpipe_v_cool_down(d, P, s);
  return d.out;
}

}  // namespace dtl::pipeline::detail

namespace dtl::pipeline {

std::vector<Action> dualpipe_v_part(int P, int M, int s, DualPipePart part) {
  validate(ScheduleKind::dualpipe_v, {P, M, 2, Placement::vee});
  if (s < 0 || s >= P)
    throw UsageError("dualpipev: stage " + std::to_string(s) + " is outside 0.." + std::to_string(P - 1));
  detail::DualWriter d;
  detail::dualpipe_v_warm_up(d, P, s);
  const std::size_t overlapped_begin = d.out.size();
  detail::dualpipe_v_overlapped(d, P, M, s);
  const std::size_t cool_down_begin = d.out.size();
  detail::dualpipe_v_cool_down(d, P, s);
  const auto at = [&](std::size_t i) { return d.out.begin() + std::ptrdiff_t(i); };
  switch (part) {
    case DualPipePart::warm_up: return {d.out.begin(), at(overlapped_begin)};
    case DualPipePart::overlapped: return {at(overlapped_begin), at(cool_down_begin)};
    case DualPipePart::cool_down: break;
  }
  return {at(cool_down_begin), d.out.end()};
}

}  // namespace dtl::pipeline
