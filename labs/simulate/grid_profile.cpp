// Reading a grid-lab run's events (grid_profile.h).
#include "labs/simulate/grid_profile.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

namespace dtl::sim {

namespace {

constexpr double kSecondsPerNs = 1e-9;

struct Block {
  Event span;
  bool forward = true;
};

struct RankEvents {
  std::vector<Event> comm;    // collectives on the comm stream, by begin
  std::vector<Block> blocks;  // "fwd block N" / "bwd block N" spans, by begin
};

struct Window {
  std::int64_t begin = 0, end = 0;
  bool holds(const Event& e) const { return e.begin_ns >= begin && e.begin_ns < end; }
  double seconds() const { return double(end - begin) * kSecondsPerNs; }
};

double seconds(const Event& e) { return double(e.end_ns - e.begin_ns) * kSecondsPerNs; }

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const Role& role_of(const Event& e, const std::vector<Role>& roles) {
  static const Role none;
  return e.label < roles.size() ? roles[e.label] : none;
}

std::vector<RankEvents> by_rank(const std::vector<Event>& events, const std::vector<Role>& roles, int ranks) {
  std::vector<RankEvents> out(std::size_t(ranks), RankEvents{});
  for (const Event& e : events) {
    if (e.rank < 0 || e.rank >= ranks) continue;
    RankEvents& r = out[std::size_t(e.rank)];
    if (e.kind == EventKind::collective && e.stream == kStreamComm) r.comm.push_back(e);
    const Role& role = role_of(e, roles);
    if (e.kind == EventKind::compute && role.block >= 0 && (role.pass == Pass::forward || role.pass == Pass::backward))
      r.blocks.push_back({e, role.pass == Pass::forward});
  }
  const auto by_begin = [](const Event& a, const Event& b) { return a.begin_ns < b.begin_ns; };
  for (RankEvents& r : out) {
    std::sort(r.comm.begin(), r.comm.end(), by_begin);
    std::sort(r.blocks.begin(), r.blocks.end(),
              [&](const Block& a, const Block& b) { return by_begin(a.span, b.span); });
  }
  return out;
}

// The steps between the second barrier and the last one.
std::vector<Window> step_windows(const RankEvents& r, const std::vector<Role>& roles) {
  std::vector<const Event*> barriers;
  for (const Event& e : r.comm)
    if (role_of(e, roles).collective == CollectiveKind::barrier) barriers.push_back(&e);
  std::vector<Window> w;
  for (std::size_t i = 1; i + 1 < barriers.size(); ++i) w.push_back({barriers[i]->end_ns, barriers[i + 1]->begin_ns});
  return w;
}

// A block span without the tp collectives inside it.
double block_compute(const RankEvents& r, const Event& block) {
  double s = seconds(block);
  for (const Event& c : r.comm)
    if (c.axis == GroupAxis::tp && c.begin_ns >= block.begin_ns && c.end_ns <= block.end_ns) s -= seconds(c);
  return s;
}

bool is_loss_all_reduce(const Event& e, const std::vector<Role>& roles) {  // the world's, 8 bytes
  return e.axis == GroupAxis::none && e.bytes == 8 && role_of(e, roles).collective == CollectiveKind::all_reduce;
}

// AdamW: after the first dp collective of more than 8 bytes, until the next collective begins.
double optimizer_gap(const RankEvents& r, const Window& w) {
  for (std::size_t i = 0; i + 1 < r.comm.size(); ++i) {
    const Event& c = r.comm[i];
    if (w.holds(c) && c.axis == GroupAxis::dp && c.bytes > 8)
      return double(r.comm[i + 1].begin_ns - c.end_ns) * kSecondsPerNs;
  }
  return 0;
}

// The compute of a rank's block calls in one direction during one step, in order.
std::vector<double> block_calls(const RankEvents& r, const Window& w, bool forward) {
  std::vector<double> out;
  for (const Block& b : r.blocks)
    if (b.forward == forward && w.holds(b.span)) out.push_back(block_compute(r, b.span));
  return out;
}

// A stage's seconds per block call. Its tp group waits for its slowest member at every block
// (Megatron's g all-reduce) and the step for its slowest dp replica, so: per call the largest
// over the tp group, their mean over a step, the largest over the replicas; then the median
// over the steps, as the lab's step time is.
double stage_block_seconds(const std::vector<RankEvents>& ranks, const std::vector<std::vector<Window>>& windows,
                           const GridShapeSpec& g, int stage, bool forward) {
  std::vector<double> per_step;
  for (std::size_t i = 0; i < windows[0].size(); ++i) {
    double slowest = 0;
    for (int d = 0; d < g.dp; ++d) {
      std::vector<double> group;
      for (int t = 0; t < g.tp; ++t) {
        const std::size_t r = std::size_t((stage * g.dp + d) * g.tp + t);
        if (i >= windows[r].size()) continue;
        const std::vector<double> calls = block_calls(ranks[r], windows[r][i], forward);
        if (t == 0) group = calls;
        group.resize(std::min(group.size(), calls.size()));
        for (std::size_t k = 0; k < group.size(); ++k) group[k] = std::max(group[k], calls[k]);
      }
      slowest = std::max(slowest, mean(group));
    }
    if (slowest > 0) per_step.push_back(slowest);
  }
  if (per_step.empty()) throw Error("the grid run's trace has no block spans on stage " + std::to_string(stage));
  return median(per_step);
}

StepPhases phases_of(const RankEvents& r, const Window& w, const std::vector<Role>& roles) {
  StepPhases p;
  for (const Block& b : r.blocks)
    if (w.holds(b.span)) p.compute += block_compute(r, b.span);
  for (const Event& c : r.comm) {
    if (!w.holds(c)) continue;
    if (c.axis == GroupAxis::tp) p.tp += seconds(c);
    if (c.axis == GroupAxis::dp || is_loss_all_reduce(c, roles)) p.dp += seconds(c);
  }
  p.rest = w.seconds() - p.compute - p.tp - p.dp;
  return p;
}

}  // namespace

GridProfile profile_grid_events(const std::vector<Event>& events, const std::vector<Role>& roles,
                                const GridShapeSpec& g) {
  const int D = g.dp, T = g.tp, P = g.pp, N = D * T * P;
  const std::vector<RankEvents> ranks = by_rank(events, roles, N);
  std::vector<std::vector<Window>> windows;
  for (const RankEvents& r : ranks) windows.push_back(step_windows(r, roles));
  const std::vector<Window>& w0 = windows[0];
  if (w0.empty()) throw Error("the grid run's trace has fewer than 3 step barriers: run at least 3 steps");
  GridProfile p;
  p.steps_read = int(w0.size());
  std::vector<double> pre;  // rank 0: the step's start to its first block (the batch)
  for (const Window& w : w0)
    for (const Block& b : ranks[0].blocks)
      if (w.holds(b.span)) {
        pre.push_back(double(b.span.begin_ns - w.begin) * kSecondsPerNs);
        break;
      }
  for (int s = 0; s < P; ++s) {
    p.block_forward_s.push_back(stage_block_seconds(ranks, windows, g, s, true));
    p.block_backward_s.push_back(stage_block_seconds(ranks, windows, g, s, false));
    std::vector<double> host;  // the batch (rank 0's) and the slowest AdamW of the stage
    for (std::size_t i = 0; i < pre.size(); ++i) {
      double adamw = 0;
      for (int r = s * D * T; r < (s + 1) * D * T; ++r)
        if (i < windows[std::size_t(r)].size())
          adamw = std::max(adamw, optimizer_gap(ranks[std::size_t(r)], windows[std::size_t(r)][i]));
      host.push_back(pre[i] + adamw);
    }
    p.host_s.push_back(median(host));
  }
  std::vector<double> compute, tp, dp, rest;
  for (const Window& w : w0) {
    const StepPhases ph = phases_of(ranks[0], w, roles);
    compute.push_back(ph.compute), tp.push_back(ph.tp), dp.push_back(ph.dp), rest.push_back(ph.rest);
  }
  p.rank0 = {median(compute), median(tp), median(dp), median(rest)};
  return p;
}

}  // namespace dtl::sim
