// NCCL's tuning model (nccl_model.h). The constants are NCCL 2.18.5's own (src/graph/tuning.cc,
// src/graph/search.cc; latencies in µs, bandwidths in GB/s as there), the version that ran the
// published curves tests/core/nccl_model_test.cpp checks; read to learn its structure, not copied.
#include "core/theory/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace dtl::theory {

namespace {

constexpr int kAlgos = 3, kProtos = 3;  // in NcclAlgo's and NcclProto's order
constexpr double kUs = 1e-6, kGB = 1e9;

// baseLat[algo][proto]: the fixed cost of one call (ring, tree; NVLS Simple 23 µs).
constexpr double kBaseLatency[kAlgos][kProtos] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 0.0}, {0.0, 0.0, 23.0}};
// hwLat[tier][algo][proto]: each hop's latency on NVLink and on the network.
constexpr double kNvlinkHop[kAlgos][kProtos] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0.0, 0.0, 0.0}};
constexpr double kNetworkHop[kAlgos][kProtos] = {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0.0, 0.0, 0.0}};

// Per architecture (Ampere, Hopper) and scale (1 node, 2 nodes, more): the ceilings. Across nodes
// NCCL picks LL's row by the CPU's vendor (Intel 39/39/20.4) and adds a 1–2 µs network post
// overhead per ring step (tuning.cc, getNetOverhead); the profiles name no CPU: the AMD row, no overhead.
constexpr double kLlMax[2][3] = {{87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
constexpr double kRingLl128PerChannel[2][3] = {{20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kTreeLl128PerChannel[2][3] = {{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kTreePerChannel[2][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};

// treeCorrectionFactor[proto][log2(bytes/64)] (tuning.cc): trees stray from the model at medium
// sizes; powers of two from 64 B to 256 MiB, 1 beyond.
constexpr int kTreeSizes = 23;
constexpr double kTreeCorrection[kProtos][kTreeSizes] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// The per-channel speeds NCCL's topology search tries on Hopper inside a node (search.cc,
// sm90SpeedArrayIntra), fastest first: a graph's channels each run at one of them.
constexpr double kSm90IntraSpeeds[] = {60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0};

int arch_index(const NcclFabric& f) { return f.arch == GpuArch::hopper ? 1 : 0; }
int scale_index(const NcclFabric& f) { return f.nodes <= 2 ? f.nodes - 1 : 2; }

// The tier's bus bandwidth (GB/s): NVLink on one node; across nodes what the NICs carry.
double tier_bus_GBps(const NcclFabric& f) {
  if (f.nodes <= 1) return f.nvlink.nccl_Bps / kGB;
  const int nics = f.nics_per_node > 0 ? f.nics_per_node : f.ranks_per_node();
  return std::min(f.nvlink.nccl_Bps, nics * f.network.nccl_Bps) / kGB;
}

int ring_steps(CollectiveKind c, int n) { return c == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1; }

// NCCL's NVLS graph (search.cc, ncclTopoCompute and ncclTopoSearchTryNvls): one channel per GPU
// of the node, its head pulling `speed` from every GPU and twice from itself, so each GPU's NVLink
// carries (k+1)·speed; speed is the fastest of NCCL's Hopper speeds that fits. 8 H100s (NVLink
// 370.8 GB/s): 9 × 40 ≤ 370.8, so 8 channels × 40 = 320 GB/s, not the links' 370.8.
double nvls_bus_GBps(const NcclFabric& f) {
  const int k = f.ranks_per_node();
  for (double speed : kSm90IntraSpeeds)
    if ((k + 1) * speed <= f.nvlink.nccl_Bps / kGB) return k * speed;
  return 0;
}

// ncclTopoTuneModel's per-protocol refinements (tuning.cc, NCCL 2.18.5).
double bus_GBps(CollectiveKind c, const NcclFabric& f, NcclAlgo a, NcclProto p) {
  const double B = tier_bus_GBps(f), channels = f.channels;
  const int ai = arch_index(f), si = scale_index(f);
  if (a == NcclAlgo::ring) {
    // LL: a quarter of the ring for all-reduce or across nodes, a third otherwise (2.21 made it a half).
    const bool quarter = c == CollectiveKind::all_reduce || f.nodes > 1;
    if (p == NcclProto::ll) return std::min(B * (quarter ? 0.25 : 1.0 / 3.0), kLlMax[ai][si]);
    // LL128: 0.92 of the ring (its 120 data bytes of 128), 0.7 with one GPU per node.
    const double ll128 = f.ranks_per_node() < 2 ? 0.7 : 0.92;
    if (p == NcclProto::ll128) return std::min(B * ll128, channels * kRingLl128PerChannel[ai][si]);
    return B;
  }
  if (a == NcclAlgo::tree) {
    if (c != CollectiveKind::all_reduce) return 0;
    const double T = std::min(B * 0.92, channels * kTreePerChannel[ai][si]);
    if (p == NcclProto::ll) return std::min(T / 3.8, kLlMax[ai][si]);
    if (p == NcclProto::ll128)
      return std::min(T * (f.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kTreeLl128PerChannel[ai][si]);
    return T;
  }
  const bool nvls = f.nvls && f.nodes == 1 && c == CollectiveKind::all_reduce && p == NcclProto::simple;
  return nvls ? nvls_bus_GBps(f) : 0;
}

double algbw_GBps(CollectiveKind c, const NcclFabric& f, NcclAlgo a, NcclProto p) {
  const double bus = bus_GBps(c, f, a, p);
  if (a == NcclAlgo::ring) return bus * f.ranks / ring_steps(c, f.ranks);
  return a == NcclAlgo::tree ? bus * 0.5 : bus * 5.0 / 6.0;
}

// A tier's hop latencies scale with its latency_s against NCCL's Ring/Simple figure (the profiles
// carry exactly NCCL's, so by default this is NCCL's table; --intra-latency 500 makes it slower).
double hop_scale(const LinkTier& tier, double ring_simple_us) { return tier.latency_s / (ring_simple_us * kUs); }

double latency_us(CollectiveKind c, const NcclFabric& f, NcclAlgo a, NcclProto p) {
  const int ai = int(a), pi = int(p);
  const double intra = kNvlinkHop[ai][pi] * hop_scale(f.nvlink, kNvlinkHop[0][2]);
  const double inter = kNetworkHop[ai][pi] * hop_scale(f.network, kNetworkHop[0][2]);
  double lat = kBaseLatency[ai][pi];
  if (a == NcclAlgo::ring) {
    // 2.18.5 counts 2·nodes network steps for an all-reduce (2.23 made it 2·(nodes − 1)).
    const int steps = ring_steps(c, f.ranks);
    const int inter_steps = f.nodes <= 1 ? 0 : (c == CollectiveKind::all_reduce ? 2 * f.nodes : f.nodes - 1);
    return lat + (steps - inter_steps) * intra + inter_steps * inter;
  }
  if (a == NcclAlgo::tree) return lat + 2 * ((f.ranks_per_node() - 1) * intra + std::log2(double(f.nodes)) * inter);
  return lat + (f.nodes > 1 ? inter : 0);
}

// ncclTopoGetAlgoTime's "plateau effect of ring" (tuning.cc): a multi-node Simple all-reduce of
// at least 64 bytes per channel and rank pays 1.4× its latency on Ampere and Hopper.
double plateau(CollectiveKind c, double bytes, const NcclFabric& f, NcclAlgo a, NcclProto p) {
  const bool applies = a == NcclAlgo::ring && p == NcclProto::simple && f.nodes > 1 &&
                       c == CollectiveKind::all_reduce && bytes / (f.channels * f.ranks) >= 64;
  return applies ? 1.4 : 1.0;
}

}  // namespace

const char* nccl_algo_name(NcclAlgo a) { return a == NcclAlgo::ring ? "ring" : a == NcclAlgo::tree ? "tree" : "nvls"; }
const char* nccl_proto_name(NcclProto p) {
  return p == NcclProto::ll ? "LL" : p == NcclProto::ll128 ? "LL128" : "Simple";
}

NcclAlgo parse_nccl_algo(std::string_view name) {
  for (NcclAlgo a : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls})
    if (name == nccl_algo_name(a)) return a;
  throw UsageError("NCCL's algorithm is ring, tree or nvls, not '" + std::string(name) + "'");
}

NcclProto parse_nccl_proto(std::string_view name) {
  for (NcclProto p : {NcclProto::ll, NcclProto::ll128, NcclProto::simple})
    if (name == nccl_proto_name(p)) return p;
  throw UsageError("NCCL's protocol is LL, LL128 or Simple, not '" + std::string(name) + "'");
}

double nccl_wire_factor(NcclProto p) { return p == NcclProto::ll ? 2.0 : p == NcclProto::ll128 ? 128.0 / 120.0 : 1.0; }

double nccl_hop_latency_ratio(NcclProto p, bool network) {
  const auto& hop = network ? kNetworkHop : kNvlinkHop;
  const int ring = int(NcclAlgo::ring);
  return hop[ring][int(p)] / hop[ring][int(NcclProto::simple)];
}

NcclFabric nccl_fabric(const GpuProfile& profile, int ranks, int per_node) {
  NcclFabric f;
  f.ranks = std::max(1, ranks);
  const int k = std::clamp(per_node, 1, f.ranks);
  f.nodes = (f.ranks + k - 1) / k;
  f.arch = profile.arch;
  f.nvlink = profile.nvlink;
  f.network = profile.network;
  f.nvls = profile.nvls;
  return f;
}

NcclCost nccl_cost(CollectiveKind c, double bytes, const NcclFabric& f, NcclAlgo a, NcclProto p) {
  NcclCost cost;
  if (f.ranks < 2) return {true, 0, 0, 0};
  const double bw = algbw_GBps(c, f, a, p);
  if (!(bw > 0)) return cost;
  cost.supported = true;
  cost.latency_s = latency_us(c, f, a, p) * kUs * plateau(c, bytes, f, a, p);
  cost.algbw_Bps = bw * kGB;
  double effective = cost.algbw_Bps;
  if (a == NcclAlgo::tree) {  // the size correction, powers of two from 64 B
    const int log_size = bytes >= 64 ? int(std::floor(std::log2(bytes / 64))) : 0;
    if (log_size < kTreeSizes) effective *= kTreeCorrection[int(p)][std::max(0, log_size)];
  }
  cost.time_s = cost.latency_s + bytes / effective;
  return cost;
}

NcclChoice nccl_choose(CollectiveKind c, double bytes, const NcclFabric& f) {
  NcclChoice best, second;
  best.time_s = second.time_s = -1;
  if (f.ranks < 2) return {NcclAlgo::ring, NcclProto::simple, 0, "one rank: nothing to send"};
  for (NcclAlgo a : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls})
    for (NcclProto p : {NcclProto::ll, NcclProto::ll128, NcclProto::simple}) {
      const NcclCost cost = nccl_cost(c, bytes, f, a, p);
      if (!cost.supported) continue;
      const NcclChoice here{a, p, cost.time_s, ""};
      if (best.time_s < 0 || here.time_s < best.time_s)
        second = best, best = here;
      else if (second.time_s < 0 || here.time_s < second.time_s)
        second = here;
    }
  char why[160];
  std::snprintf(why, sizeof why, "%s/%s: %.1f µs", nccl_algo_name(best.algo), nccl_proto_name(best.proto),
                best.time_s * 1e6);
  best.why = why;
  if (second.time_s >= 0) {
    std::snprintf(why, sizeof why, ", next %s/%s %.1f µs", nccl_algo_name(second.algo), nccl_proto_name(second.proto),
                  second.time_s * 1e6);
    best.why += why;
  }
  return best;
}

double nccl_time(CollectiveKind c, double bytes, const NcclFabric& f) { return nccl_choose(c, bytes, f).time_s; }

double nccl_bus_bandwidth(CollectiveKind c, double bytes, const NcclFabric& f) {
  const double t = nccl_time(c, bytes, f);
  return t > 0 ? bytes / t * busbw_factor(c, f.ranks) : 0;
}

}  // namespace dtl::theory
