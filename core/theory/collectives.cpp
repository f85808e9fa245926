#include "core/theory/collectives.h"

#include "core/error.h"

namespace dtl::theory {

Algo parse_algo(std::string_view s) {
  if (s == "naive") return Algo::naive;
  if (s == "ring") return Algo::ring;
  if (s == "tree") return Algo::tree;
  if (s == "rhd") return Algo::rhd;
  throw UsageError("unknown algorithm '" + std::string(s) + "'; use one of naive ring tree rhd");
}

std::string_view algo_name(Algo a) {
  switch (a) {
    case Algo::naive: return "naive";
    case Algo::ring: return "ring";
    case Algo::tree: return "tree";
    case Algo::rhd: return "rhd";
  }
  return "?";
}

Collective parse_collective(std::string_view s) {
  if (s == "all_reduce") return Collective::all_reduce;
  if (s == "reduce_scatter") return Collective::reduce_scatter;
  if (s == "all_gather") return Collective::all_gather;
  if (s == "broadcast") return Collective::broadcast;
  if (s == "reduce") return Collective::reduce;
  if (s == "all_to_all") return Collective::all_to_all;
  if (s == "all_to_allv") return Collective::all_to_allv;
  throw UsageError("unknown collective '" + std::string(s) +
                   "'; use one of all_reduce reduce_scatter all_gather broadcast reduce all_to_all all_to_allv");
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::all_to_all: return "all_to_all";
    case Collective::all_to_allv: return "all_to_allv";
  }
  return "?";
}

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

CommCost all_reduce_cost(Algo a, int P, double N, Link link) {
  if (P <= 1) return {};
  CommCost c;
  switch (a) {
    case Algo::ring:
      c.bytes_per_rank = 2.0 * (P - 1) / P * N;
      c.messages_per_rank = 2 * (P - 1);
      c.steps = 2 * (P - 1);
      c.time_s = alpha_beta(c.steps, c.bytes_per_rank, link);
      break;
    case Algo::rhd: {
      const int core = floor_pow2(P);
      const bool extra = core != P;
      const double core_bytes = 2.0 * (core - 1) / core * N;
      c.bytes_per_rank = core_bytes + (extra ? N : 0);
      c.messages_per_rank = 2 * ceil_log2(core) + (extra ? 1 : 0);
      c.steps = 2 * ceil_log2(core) + (extra ? 2 : 0);
      c.time_s = alpha_beta(c.steps, core_bytes + (extra ? 2 * N : 0), link);
      break;
    }
    case Algo::tree:
      c.bytes_per_rank = ceil_log2(P) * N;
      c.messages_per_rank = ceil_log2(P);
      c.steps = 2 * ceil_log2(P);
      c.time_s = alpha_beta(c.steps, c.steps * N, link);
      break;
    case Algo::naive:
      c.bytes_per_rank = (P - 1) * N;
      c.messages_per_rank = P - 1;
      c.steps = 2 * (P - 1);
      c.time_s = alpha_beta(c.steps, c.steps * N, link);
      break;
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

double busbw_factor(Collective c, int P) {
  switch (c) {
    case Collective::all_reduce: return 2.0 * (P - 1) / P;
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all:
    case Collective::all_to_allv: return double(P - 1) / P;
    case Collective::broadcast:
    case Collective::reduce: return 1.0;
  }
  return 1.0;
}

double collective_bytes(Collective c, int P, double count_bytes) {
  switch (c) {
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all:
    case Collective::all_to_allv: return P * count_bytes;
    default: return count_bytes;
  }
}

double library_collective_time(std::string_view name, int P, double bytes, Link link) {
  if (P <= 1 || link.beta_Bps <= 0) return 0;
  const double a = link.alpha_s, b = link.beta_Bps;
  if (name == "all_reduce") return 2.0 * (P - 1) * a + 2.0 * (P - 1) / P * bytes / b;
  if (name == "reduce_scatter" || name == "all_gather" || name == "all_to_all")
    return (P - 1) * a + (P - 1.0) / P * bytes / b;
  if (name == "broadcast" || name == "reduce") return (P - 1) * a + bytes / b;
  if (name == "barrier") return 2.0 * ceil_log2(P) * a;
  if (name == "all_to_allv") return (P - 1) * a + bytes / b;  // bytes: the rank's busier direction
  return 0;
}

double ring_all_reduce_time(int P, double bytes, Link link) {
  return all_reduce_cost(Algo::ring, P, bytes, link).time_s;
}

double comm_efficiency(double compute_s, double comm_s) {
  return compute_s + comm_s > 0 ? compute_s / (compute_s + comm_s) : 1.0;
}

}  // namespace dtl::theory
