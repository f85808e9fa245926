// Measured communication figures, computed from the rank's own events (never from a
// second set of counters), then combined over ranks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <set>
#include <utility>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/link.h"
#include "core/memory/memory.h"
#include "core/trace/event.h"
#include "labs/report.h"

namespace dtl {

struct Traffic {
  double bytes_sent = 0;
  double messages_sent = 0;
  double steps = 0;       // distinct tags this rank used: every algorithm step has its own
                          // (per tier on two tiers: a node's ring and a rail's may reuse tags)
  std::set<int> sent_to;  // global ranks this rank sent to
};

// Where this rank's event log ends now; pass it to traffic_since.
std::size_t traffic_mark(Comm& comm);
// This rank's point-to-point traffic recorded after `mark`. Throws if tracing is off.
// Given `nodes`, a step is a tag on one tier: messages within the node and between nodes are
// told apart by the peer's node (for the hierarchical all-reduce, whose node rings and rails
// reuse the ring's tags; a flat ring's boundary rank receives a tag inside and sends it out).
Traffic traffic_since(Comm& comm, std::size_t mark, const NodeLayout& nodes = {});
// The largest bytes/messages/steps over all ranks (a collective over comm).
Traffic traffic_max(Comm& comm, const Traffic& mine);
// The most bytes of tag `tag` this rank held at once after `mark` (its alloc/free events
// since then; what was allocated before the mark is not counted).
double peak_bytes_since(Comm& comm, std::size_t mark, MemTag tag);
// Root's tensors on every rank, in three broadcasts whatever their number (the count, the
// sizes, the elements): how a reference that one rank computed reaches the others.
void broadcast_tensors(Comm& comm, std::vector<std::vector<float>>& tensors, int root);
// Largest value over all ranks of a double (e.g. a time).
double max_over_ranks(Comm& comm, double v);

// The memory view's formula for this rank (trace meta predicted_bytes_of_rank.R): AdamW's
// model state at 16 B/param (4+4+8 in fp32, 2+2+12 mixed) for this rank's `params`, plus the
// `activation_bytes` the lab predicts it keeps; global rank 0 also writes how (`words`).
// Each rank writes its own: a pipeline's stages differ. (Under MPI the merged trace keeps
// rank 0's meta only.)
// With `phase` (a run of several phases that differ: the pipeline's --schedule all), the
// formula is that phase's (predicted_bytes_of_rank.<role_key>.R): the view shows the one of
// the phase at its cursor.
void publish_memory_formula(Comm& comm, double params, double activation_bytes, const std::string& words,
                            const Role* phase = nullptr);

// Model-state rows by tag against the bytes-per-parameter formula (seed 001: AdamW keeps
// 4 + 4 + 8 B/param in fp32 and 2 + 2 + 12 in mixed precision, both 16): `params` the rank's
// parameter count, the bytes its peaks by tag; ids `prefix`param_bytes, ...; labels end in
// `whose` ("per rank", ", rank 0").
struct ModelStateBytes {
  double params = 0, param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;  // optimizer: m, v (+ master)
};
void add_model_state_rows(Report& rep, const std::string& prefix, const std::string& whose, DType precision,
                          const ModelStateBytes& m);

// The device's own count against the tracker: what this rank's thread holds from its
// device's allocator (DeviceOps::bytes_allocated_by_this_thread: cudaMalloc'd, the stand-in's,
// or the host's) minus what its MemoryTracker says is allocated, minus `cached` (bytes a
// caching pool holds while no tensor uses them). 0 when every buffer the lab allocates goes
// through its tracker; the largest |difference| over ranks (a collective over comm).
double device_vs_tracker_bytes(Comm& comm, const MemoryTracker& mem, Device device, double cached = 0);
// Its row: a check against 0, exact.
void add_device_memory_check(Report& rep, const std::string& prefix, double difference);

// The largest relative difference, to the tensor's largest value, a 16-bit gradient
// averaged over N ranks may show against one rank's: each rank rounds its gradient once,
// the reduction rounds after each of its N−1 additions, the division and the reference
// once more: (N + 2)·u, u = 2^-8 (bf16) or 2^-11 (f16), never below 4u. (It was 2^-6 for
// every N, which 48 bf16 ranks exceed by rounding alone.) A missing or doubled 1/N is off
// by (N−1)/N of the value, far above it.
double sixteen_bit_gradient_bound(DType precision, int ranks);
std::string sixteen_bit_gradient_formula(DType precision);  // "(N+2)·2^-8"

// Per-run means of per-step values: runs of `steps` consecutive values (a timing is then
// the median of the runs, labs/report.h repeated()).
std::vector<double> run_means(const std::vector<double>& per_step, int steps);

// The larger of `worst` and a difference `d`; a NaN difference (a NaN loss, weight or
// gradient) counts as infinite, so a check against a reference fails: std::max(worst, NaN)
// returns worst, and a run gone to NaN would read "max diff 0 ✓".
inline double larger_difference(double worst, double d) { return std::isnan(d) ? INFINITY : std::max(worst, d); }

// Largest |a[i] − b[i]| over the common length, NaN-aware (larger_difference).
inline double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    d = larger_difference(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

// Largest |a[i] − b[i]| / max |b| (the tensor's own scale: gradients span orders of
// magnitude from tensor to tensor), NaN-aware; infinite when the lengths differ.
inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1e-30;
  for (float v : b) scale = std::max(scale, std::fabs(double(v)));
  return a.size() == b.size() ? max_abs_difference(a, b) / scale : INFINITY;
}

// What two runs' first-step gradients g and g1 do to AdamW's first update, in units of lr:
// max |φ(g) − φ(g1)|, φ(x) = x/(|x| + ε) (m̂/(√v̂ + ε) on step 1: m̂ = g, √v̂ = |g|). Where
// |g| ≫ ε it is about ε·|g − g1|/g²; where g is near ε a sum-order difference moves the update
// by up to 2 (a flipped sign), so the update, not the gradient, sets how far the weights of
// two equivalent runs may part (issue 46: a GPT of hidden 256, 192 layers of hidden 4).
// NaN-aware; 2 when the lengths differ.
inline double adam_first_update_difference(const std::vector<float>& g, const std::vector<float>& g1, double eps) {
  auto phi = [eps](float x) { return double(x) / (std::fabs(double(x)) + eps); };
  double most = 0;
  for (std::size_t i = 0; i < std::min(g.size(), g1.size()); ++i)
    most = larger_difference(most, std::fabs(phi(g[i]) - phi(g1[i])));
  return g.size() == g1.size() ? most : 2.0;
}

// The weights' bound after `steps` AdamW steps against an equivalent run: lr times the first
// update's difference (at most 2) plus the 0.02 that sum order leaves per step on small models.
inline double adam_weight_tolerance(double lr, int steps, double first_update_diff) {
  return lr * steps * (std::min(first_update_diff, 2.0) + 0.02);
}

}  // namespace dtl
