#include "core/theory/collectives.h"

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
    case AlgorithmKind::naive:
      c.bytes_per_rank = (P - 1) * N;
      c.messages_per_rank = P - 1;
      c.steps = 2 * (P - 1);
      c.time_s = alpha_beta(c.steps, c.steps * N, link);
      break;
    case AlgorithmKind::none:
    case AlgorithmKind::library:
      throw Error(std::string("all_reduce_cost: no formula for algorithm '") + algorithm_kind_name(a) +
                  "'; it takes naive, ring, tree or rhd");
  }
  return c;
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

double ring_all_reduce_time(int P, double bytes, Link link) {
  return all_reduce_cost(AlgorithmKind::ring, P, bytes, link).time_s;
}

double comm_efficiency(double compute_s, double comm_s) {
  return compute_s + comm_s > 0 ? compute_s / (compute_s + comm_s) : 1.0;
}

}  // namespace dtl::theory
