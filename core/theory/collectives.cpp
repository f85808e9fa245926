#include "core/theory/collectives.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace dtl::theory {

int ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

int floor_pow2(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

namespace {
double alpha_beta(int steps, double bytes_on_critical_path, Link link) {
  if (link.beta_Bps <= 0) return 0;
  return steps * link.alpha_s + bytes_on_critical_path / link.beta_Bps;
}
}  // namespace

CommCost all_reduce_cost(AlgorithmKind a, int P, double N, Link link) {
  if (P <= 1) return {};
  CommCost c;
  switch (a) {
    case AlgorithmKind::ring:
      c.bytes_per_rank = 2.0 * (P - 1) / P * N;
      c.messages_per_rank = 2 * (P - 1);
      c.steps = 2 * (P - 1);
      c.time_s = alpha_beta(c.steps, c.bytes_per_rank, link);
      break;
    case AlgorithmKind::rhd: {
      const int core = floor_pow2(P);
      const bool extra = core != P;
      const double core_bytes = 2.0 * (core - 1) / core * N;
      c.bytes_per_rank = core_bytes + (extra ? N : 0);
      c.messages_per_rank = 2 * ceil_log2(core) + (extra ? 1 : 0);
      c.steps = 2 * ceil_log2(core) + (extra ? 2 : 0);
      c.time_s = alpha_beta(c.steps, core_bytes + (extra ? 2 * N : 0), link);
      break;
    }
    case AlgorithmKind::tree:
      c.bytes_per_rank = ceil_log2(P) * N;
      c.messages_per_rank = ceil_log2(P);
      c.steps = 2 * ceil_log2(P);
      c.time_s = alpha_beta(c.steps, c.steps * N, link);
      break;
    case AlgorithmKind::ring_sliced: return ring_sliced_all_reduce_cost(P, N, ring_slices(N / P), link);
    case AlgorithmKind::double_tree: return double_tree_all_reduce_cost(P, N, double_tree_chunks(N), link);
    case AlgorithmKind::naive:
      c.bytes_per_rank = (P - 1) * N;
      c.messages_per_rank = P - 1;
      c.steps = 2 * (P - 1);
      c.time_s = alpha_beta(c.steps, c.steps * N, link);
      break;
    case AlgorithmKind::hierarchical:
      throw Error(
          "all_reduce_cost: the hierarchical all-reduce depends on the nodes; use hierarchical_all_reduce_cost");
    case AlgorithmKind::none:
    case AlgorithmKind::library:
      throw Error(std::string("all_reduce_cost: no formula for algorithm '") + algorithm_kind_name(a) +
                  "'; it takes naive, ring, tree, rhd, ring_sliced or double_tree");
  }
  return c;
}

double channels_time(double rounds, double b, int C, Link link) {
  if (link.beta_Bps <= 0) return 0;
  return rounds * (link.alpha_s + C * b / link.beta_Bps);
}

CommCost ring_sliced_all_reduce_cost(int P, double N, int S, Link link, int C) {
  if (P <= 1) return {};
  CommCost c;
  c.bytes_per_rank = 2.0 * (P - 1) / P * N;  // the ring's bytes, in S·C times as many messages
  c.messages_per_rank = 2 * (P - 1) * S * C;
  c.steps = 2 * (P - 1);  // a step is still one chunk's hop (one tag); its slices and channels share it
  // α per message on a link α occupies: 2(P-1)·S·α + 2(P-1)/P·N/β for one channel.
  c.time_s = channels_time(2.0 * (P - 1) * S, N / (double(C) * P * S), C, link);
  return c;
}

TreeLinks binary_tree_links(int P, int rank) {
  TreeLinks t;
  int bit = 1;
  while (bit < P && !(bit & rank)) bit <<= 1;  // rank's lowest set bit (P's next power of two for rank 0)
  if (rank == 0) {
    if (P > 1) t.children[1] = bit >> 1;
    return t;
  }
  t.parent = (rank ^ bit) | (bit << 1);  // up one level: clear my bit, set the next
  if (t.parent >= P) t.parent = rank ^ bit;
  int low = bit >> 1;
  if (low == 0) return t;  // odd ranks are leaves
  t.children[0] = rank - low;
  while (low > 0 && rank + low >= P) low >>= 1;  // the right child, if it exists
  t.children[1] = low > 0 ? rank + low : -1;
  return t;
}

TreeLinks double_tree_links(int P, int rank, int tree) {
  if (tree == 0) return binary_tree_links(P, rank);
  const bool mirror = P % 2 == 0;
  auto to_tree0 = [&](int r) { return mirror ? P - 1 - r : (r - 1 + P) % P; };
  auto from_tree0 = [&](int r) { return r < 0 ? -1 : mirror ? P - 1 - r : (r + 1) % P; };
  const TreeLinks t0 = binary_tree_links(P, to_tree0(rank));
  TreeLinks t;
  t.parent = from_tree0(t0.parent);
  t.children[0] = from_tree0(t0.children[0]);
  t.children[1] = from_tree0(t0.children[1]);
  return t;
}

int double_tree_chunks(double N) {
  return int(std::clamp(std::ceil(N / 2 / kRingSliceBytes), 1.0, double(kMaxRingSlices)));
}

CommCost double_tree_all_reduce_cost(int P, double N, int K, Link link, int C) {
  if (P <= 1) return {};
  CommCost c;
  for (int r = 0; r < P; ++r) {
    int transfers = 0;  // halves this rank sends: up to its parent, down to each child, in both trees
    for (int tree = 0; tree < 2; ++tree) {
      const TreeLinks t = double_tree_links(P, r, tree);
      transfers += (t.parent >= 0) + t.child_count();
    }
    c.bytes_per_rank = std::max(c.bytes_per_rank, transfers * N / 2);
    c.messages_per_rank = std::max(c.messages_per_rank, transfers * K * C);
  }
  c.steps = 4 * K;
  if (link.beta_Bps > 0) {
    // One channel: m·α + B/β, plus the pipeline's fill, up and down its deepest path.
    const double b = N / 2 / K / C, chunk_hop = link.alpha_s + b / link.beta_Bps;
    c.time_s = channels_time(double(c.messages_per_rank) / C, b, C, link) + 2 * double_tree_fill_hops(P) * chunk_hop;
  }
  return c;
}

int double_tree_fill_hops(int P) {
  int most = 0;
  for (int tree = 0; tree < 2; ++tree)
    for (int r = 0; r < P; ++r) {  // from rank r up to the root: each ancestor's children, one after the other
      int hops = 0;
      for (int a = double_tree_links(P, r, tree).parent; a >= 0; a = double_tree_links(P, a, tree).parent)
        hops += double_tree_links(P, a, tree).child_count();
      most = std::max(most, hops);
    }
  return most;
}

int ring_slices(double chunk_bytes) {
  const double s = std::ceil(chunk_bytes / kRingSliceBytes);
  return int(std::clamp(s, 1.0, double(kMaxRingSlices)));
}

CommCost ring_reduce_scatter_cost(int P, double N, Link link) {
  if (P <= 1) return {};
  CommCost c{(P - 1.0) / P * N, P - 1, P - 1, 0};
  c.time_s = alpha_beta(c.steps, c.bytes_per_rank, link);
  return c;
}

CommCost ring_all_gather_cost(int P, double N, Link link) { return ring_reduce_scatter_cost(P, N, link); }

CommCost tree_broadcast_cost(int P, double N, Link link) {
  if (P <= 1) return {};
  CommCost c{ceil_log2(P) * N, ceil_log2(P), ceil_log2(P), 0};
  c.time_s = alpha_beta(c.steps, c.steps * N, link);
  return c;
}

double busbw_factor(CollectiveKind c, int P) {
  switch (c) {
    case CollectiveKind::all_reduce: return 2.0 * (P - 1) / P;
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_gather:
    case CollectiveKind::all_to_all:
    case CollectiveKind::all_to_allv: return double(P - 1) / P;
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return 1.0;
    case CollectiveKind::none:
    case CollectiveKind::barrier: return 0.0;
  }
  return 1.0;
}

double collective_bytes(CollectiveKind c, int P, double count_bytes) {
  switch (c) {
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_gather:
    case CollectiveKind::all_to_all:
    case CollectiveKind::all_to_allv: return P * count_bytes;
    default: return count_bytes;
  }
}

double library_collective_time(CollectiveKind c, int P, double bytes, Link link) {
  if (P <= 1 || link.beta_Bps <= 0) return 0;
  const double a = link.alpha_s, b = link.beta_Bps;
  switch (c) {
    case CollectiveKind::all_reduce: return 2.0 * (P - 1) * a + 2.0 * (P - 1) / P * bytes / b;
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_gather:
    case CollectiveKind::all_to_all: return (P - 1) * a + (P - 1.0) / P * bytes / b;
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return (P - 1) * a + bytes / b;
    case CollectiveKind::barrier: return 2.0 * ceil_log2(P) * a;
    case CollectiveKind::all_to_allv: return (P - 1) * a + bytes / b;  // bytes: the rank's busier direction
    case CollectiveKind::none: return 0;
  }
  return 0;
}

double two_tier_collective_time(CollectiveKind c, int nodes, int per_node, double bytes, Link intra, Link inter) {
  if (nodes <= 1) return library_collective_time(c, per_node, bytes, intra);
  if (per_node <= 1) return library_collective_time(c, nodes, bytes, inter);
  const double rail_bytes = bytes / per_node;  // each member's share crosses on its own NIC
  auto within = [&](CollectiveKind k, double n) { return library_collective_time(k, per_node, n, intra); };
  auto between = [&](CollectiveKind k, double n) { return library_collective_time(k, nodes, n, inter); };
  switch (c) {
    case CollectiveKind::all_reduce:
      return within(CollectiveKind::reduce_scatter, bytes) + between(CollectiveKind::all_reduce, rail_bytes) +
             within(CollectiveKind::all_gather, bytes);
    case CollectiveKind::reduce_scatter:
      return within(CollectiveKind::reduce_scatter, bytes) + between(CollectiveKind::reduce_scatter, rail_bytes);
    case CollectiveKind::all_gather:
      return between(CollectiveKind::all_gather, rail_bytes) + within(CollectiveKind::all_gather, bytes);
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return between(c, bytes) + within(c, bytes);
    case CollectiveKind::all_to_all:
    case CollectiveKind::all_to_allv: {
      const int P = nodes * per_node;
      return (P - 1) * inter.alpha_s + (nodes - 1.0) / nodes * bytes / inter.beta_Bps;
    }
    case CollectiveKind::barrier: return 2.0 * ceil_log2(nodes * per_node) * inter.alpha_s;
    case CollectiveKind::none: return 0;
  }
  return 0;
}

CommCost hierarchical_all_reduce_cost(int nodes, int G, double N, Link intra, Link inter) {
  CommCost c;
  c.bytes_per_rank = 2.0 * (G - 1) / G * N + 2.0 * (nodes - 1) / nodes * N / G;
  c.messages_per_rank = 2 * (G - 1) + 2 * (nodes - 1);
  c.steps = c.messages_per_rank;
  const double intra_s = intra.beta_Bps > 0 ? 2.0 * (G - 1) * (intra.alpha_s + N / (G * intra.beta_Bps)) : 0;
  const double inter_s =
      inter.beta_Bps > 0 ? 2.0 * (nodes - 1) * (inter.alpha_s + N / (double(G) * nodes * inter.beta_Bps)) : 0;
  c.time_s = intra_s + inter_s;
  return c;
}

double ring_all_reduce_time(int P, double bytes, Link link) {
  return all_reduce_cost(AlgorithmKind::ring, P, bytes, link).time_s;
}

double comm_efficiency(double compute_s, double comm_s) {
  return compute_s + comm_s > 0 ? compute_s / (compute_s + comm_s) : 1.0;
}

}  // namespace dtl::theory
