// Which Megatron operator (f or g, of which region) a collective of the tensor-parallel
// lab's trace is (split_model.h, tp_moment). The lab records its blocks as compute spans
// of role {pass forward or backward, block L} on each rank's main stream and the
// collectives on the comm stream (labs/tensor_parallel/tp_lab.cpp counts them the same
// way: by the block span a collective begins in).
#include <algorithm>

#include "viz/views/tensor_parallel/split_model.h"

namespace dtl::viz {

namespace {

// The block span on `rank`'s main stream that holds time t, or nullptr.
const Event* block_at(const TraceData& d, int rank, std::int64_t t, int& layer, bool& forward) {
  for (const Event& e : d.events) {
    if (e.begin_ns > t) break;  // sorted by begin
    if (e.rank != rank || e.kind != EventKind::compute || e.stream != kStreamMain || e.end_ns < t) continue;
    const Role& role = d.role(e);
    if (role.block < 0 || (role.pass != Pass::forward && role.pass != Pass::backward)) continue;
    layer = role.block, forward = role.pass == Pass::forward;
    return &e;
  }
  return nullptr;
}

// The regions in forward order ("attention", "mlp"): those with an f or g marker.
std::vector<std::string> regions(const SplitModel& m) {
  std::vector<std::string> out;
  for (const SplitMarker& k : m.markers)
    if (std::find(out.begin(), out.end(), k.region) == out.end()) out.push_back(k.region);
  return out;
}

// Walks the block's collectives up to `target`, giving each its operator and region.
void classify(const std::vector<const Event*>& in_block, const Event* target, const TraceData& d,
              const std::vector<std::string>& order, TpMoment& out) {
  std::size_t region = 0;
  int gathers = 0;  // all-gathers seen in this region (sequence parallel backward)
  for (const Event* c : in_block) {
    const CollectiveKind kind = d.role(*c).collective;
    char op = 0;
    bool regather = false, next_region = false;
    if (kind == CollectiveKind::all_reduce)
      op = out.forward ? 'g' : 'f', next_region = true;
    else if (kind == CollectiveKind::all_gather && out.forward)
      op = 'f';
    else if (kind == CollectiveKind::reduce_scatter && out.forward)
      op = 'g', next_region = true;
    else if (kind == CollectiveKind::all_gather)
      op = gathers == 0 ? 'g' : 'f', regather = gathers > 0, ++gathers;
    else if (kind == CollectiveKind::reduce_scatter)
      op = 'f', next_region = true;
    if (c == target) {
      out.op = region < order.size() ? op : 0;
      out.region = region < order.size() ? order[region] : "";
      out.regather = regather;
      return;
    }
    if (next_region) ++region, gathers = 0;
  }
}

std::string dashed(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

std::string caption(const SplitModel& m, const TpMoment& t) {
  const std::string what = dashed(t.collective) + " " + split_bytes(t.bytes);
  if (!t.in_block) return "outside the blocks: " + what + " (embedding, loss, or the check against one rank)";
  std::string c =
      "layer " + std::to_string(t.layer) + " \xc2\xb7 " + (t.forward ? "forward" : "backward") + " \xc2\xb7 ";
  if (t.marker < 0) return c + what;
  const SplitMarker& k = m.markers[std::size_t(t.marker)];
  c += std::string(1, t.op) + (k.after ? " after " : " before ") + m.matrices[k.matrix].short_name();
  if (t.regather) c += " (its input gathered again for the weight gradient)";
  return c + ": " + what;
}

}  // namespace

TpMoment tp_moment(const TraceData& d, const SplitModel& m, const Event& collective) {
  TpMoment t;
  t.valid = collective.kind == EventKind::collective;
  if (!t.valid) return t;
  t.collective = printable(d.label(collective.label), 32);
  t.bytes = collective.bytes;
  t.rank = collective.rank;
  const Event* block = block_at(d, collective.rank, collective.begin_ns, t.layer, t.forward);
  t.in_block = block != nullptr;
  if (block) {
    std::vector<const Event*> in_block;
    for (const Event& e : d.events) {
      if (e.begin_ns > block->end_ns) break;
      if (e.rank == collective.rank && e.stream == collective.stream && e.kind == EventKind::collective &&
          e.begin_ns >= block->begin_ns)
        in_block.push_back(&e);
    }
    // `collective` may be a copy (the step list): find it among the block's by time.
    const auto same = std::find_if(in_block.begin(), in_block.end(), [&](const Event* e) {
      return e->begin_ns == collective.begin_ns && e->end_ns == collective.end_ns && e->label == collective.label;
    });
    std::vector<std::string> order = regions(m);
    if (!t.forward) std::reverse(order.begin(), order.end());  // backward runs the regions last first
    if (same != in_block.end()) classify(in_block, *same, d, order, t);
    if (t.op) t.marker = m.marker_of(t.op, t.region);
  }
  t.caption = caption(m, t);
  return t;
}

TpMoment tp_moment_at(const TraceData& d, const SplitModel& m, std::int64_t t) {
  const Event* best = nullptr;
  for (const Event& e : d.events) {
    if (e.begin_ns > t) break;
    if (e.kind == EventKind::collective && e.stream != kStreamMain && e.end_ns >= t && (!best || e.rank < best->rank))
      best = &e;
  }
  return best ? tp_moment(d, m, *best) : TpMoment{};
}

}  // namespace dtl::viz
