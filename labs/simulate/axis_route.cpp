// How one axis' groups communicate (cluster_sim.h's AxisRoute): NCCL's tuning model, or the
// α-β textbook forms of a ring, a binomial tree and a two-level (node, then across nodes) ring.
#include <iterator>

#include "core/error.h"
#include "core/theory/step_model.h"
#include "labs/simulate/cluster_sim.h"  // AxisRoute

namespace dtl::sim {

namespace {
constexpr const char* kCommAlgoNames[] = {"ring", "tree", "hierarchical", "nccl"};  // in CommAlgo's order
}  // namespace

CommAlgo parse_comm_algo(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kCommAlgoNames); ++i)
    if (name == kCommAlgoNames[i]) return CommAlgo(i);
  throw UsageError("--algo is nccl, ring, tree or hierarchical, not '" + std::string(name) + "'");
}

const char* comm_algo_name(CommAlgo a) {
  return std::size_t(a) < std::size(kCommAlgoNames) ? kCommAlgoNames[std::size_t(a)] : "?";
}

namespace {

// Ring reduce-scatter or all-gather of a whole vector of `bytes`: (n−1)α + (n−1)/n·bytes/β.
double ring_half(int n, double bytes, theory::Link l) {
  return n < 2 ? 0 : (n - 1) * l.alpha_s + double(n - 1) / n * bytes / l.beta_Bps;
}

// Only when every node holds the same share of the group (size / per_node nodes of per_node
// each); otherwise (a stride that does not divide the node) the group is treated as one ring.
bool hierarchy_helps(const AxisRoute& r) {
  return r.algo == CommAlgo::hierarchical && r.crosses_nodes() && r.per_node > 1 && r.size % r.per_node == 0;
}

}  // namespace

double AxisRoute::all_reduce(double bytes) const {
  if (size < 2) return 0;
  if (algo == CommAlgo::nccl) return call_overhead_s + theory::nccl_time(CollectiveKind::all_reduce, bytes, fabric);
  if (algo == CommAlgo::tree)
    return call_overhead_s + theory::all_reduce_cost(AlgorithmKind::tree, size, bytes, slowest()).time_s;
  if (!hierarchy_helps(*this)) return call_overhead_s + 2 * ring_half(size, bytes, slowest());
  // Reduce-scatter in the node, all-reduce of one node's 1/k across nodes, all-gather in the node.
  const int k = per_node, nodes = size / per_node;
  return call_overhead_s + 2 * ring_half(k, bytes, intra) + 2 * ring_half(nodes, bytes / k, inter);
}

double AxisRoute::reduce_scatter(double bytes) const {
  if (size < 2) return 0;
  if (algo == CommAlgo::nccl) return call_overhead_s + theory::nccl_time(CollectiveKind::reduce_scatter, bytes, fabric);
  if (!hierarchy_helps(*this)) return call_overhead_s + ring_half(size, bytes, slowest());
  const int k = per_node, nodes = size / per_node;
  return call_overhead_s + ring_half(k, bytes, intra) + ring_half(nodes, bytes / k, inter);
}

double AxisRoute::all_gather(double bytes) const {  // the same ring, reversed
  if (size >= 2 && algo == CommAlgo::nccl)
    return call_overhead_s + theory::nccl_time(CollectiveKind::all_gather, bytes, fabric);
  return reduce_scatter(bytes);
}

std::string AxisRoute::describe(const char* axis, bool point_to_point) const {
  std::string s = std::string(axis) + ": " + std::to_string(size) + " ranks, ";
  if (size < 2) return s + "no communication";
  if (!crosses_nodes())
    s += "inside one node (NVLink)";
  else if (per_node == 1)
    s += "one per node (InfiniBand)";
  else
    s += (size % per_node ? "up to " : "") + std::to_string(per_node) + " per node over " +
         std::to_string((size + per_node - 1) / per_node) + " nodes (NVLink + InfiniBand)";
  if (point_to_point) return s + ", point-to-point between neighbouring stages";
  if (algo == CommAlgo::nccl) return s + ", NCCL's tuning model (ring/tree/NVLS × LL/LL128/Simple, the fastest)";
  const CommAlgo shown = algo == CommAlgo::hierarchical && !hierarchy_helps(*this) ? CommAlgo::ring : algo;
  return s + ", " + comm_algo_name(shown) +
         (shown == CommAlgo::hierarchical ? " (ring in node, ring across nodes)" : "");
}

AxisRoute route(int size, long stride, int gpus_per_node, theory::Link intra, theory::Link inter, CommAlgo algo) {
  AxisRoute r;
  r.size = size;
  r.intra = intra;
  r.inter = inter;
  r.algo = algo;
  r.per_node = theory::group_per_node(size, stride, gpus_per_node);
  return r;
}

}  // namespace dtl::sim
