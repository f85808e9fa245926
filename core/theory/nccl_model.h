// Collectives as NCCL times them (issue 45): the structure of NCCL's tuning model
// (src/graph/tuning.cc and search.cc of NCCL 2.18.5; its figures cited where they are used in
// nccl_model.cpp), as pure functions. `dtlab plan`, `dtlab simulate` and the collectives lab's
// `--algo auto` all time a library collective with nccl_time() and pick its algorithm with
// nccl_choose().
//
// For one collective of `bytes` (nccl-tests' size: the per-rank input of all_reduce, the whole
// vector of reduce_scatter / all_gather) over R ranks on N nodes (R/N per node):
//
//   time(algo, proto) = latency(algo, proto) + bytes / algbw(algo, proto)
//
//   bus bandwidth B   one tier's: on one node NVLink's (channels × bandwidth per channel),
//                     across nodes min(NVLink, NICs per node × a NIC's)
//     ring   LL       min(B/4 (all_reduce, or across nodes) | B/3, LL's ceiling)
//            LL128    min(0.92·B (0.7·B with one GPU per node), channels × LL128 per channel)
//            Simple   B
//     tree   (all_reduce only) T = min(0.92·B, channels × tree per channel); LL min(T/3.8, LL's
//            ceiling), LL128 min(T·(7/9 one node | 120/128), channels × tree LL128 per channel),
//            Simple T; × the size correction of tuning.cc's treeCorrectionFactor
//     nvls   (all_reduce on one node of NVSwitch 3, Simple only) NCCL's NVLS graph: k = R/N
//            channels × the fastest Hopper speed s with (k+1)·s ≤ NVLink (8 H100s: 8 × 40)
//   algbw             ring B·R/steps (steps 2(R−1) for all_reduce, R−1 for reduce_scatter,
//                     all_gather), tree B/2, nvls B·5/6
//   latency           base(algo, proto) +
//     ring   (steps − inter-node steps)·hop(NVLink) + inter-node steps·hop(network)
//            (inter-node steps 2N for all_reduce, N−1 otherwise); ×1.4 for a multi-node Simple
//            all_reduce of ≥ 64 B per channel and rank (NCCL's "plateau effect of ring")
//     tree   2·((R/N − 1)·hop(NVLink) + log2(N)·hop(network))
//     nvls   its own NVLink latency (+ one network hop across nodes)
//   (hop(tier) is NCCL's table scaled by the tier's latency_s over NCCL's Ring/Simple figure:
//   exactly NCCL's for the profiles, which carry that figure)
//
// nccl_choose() takes the fastest enabled (algo, proto), as NCCL does, and says why.
// Bus bandwidth as nccl-tests prints it: bytes/time × busbw_factor (collectives.h).
// What NCCL's model (and so this one) leaves out: mid-size calls run slower than it says on one
// node (docs/planning.md, "The performance model": measured against nccl-tests curves).
#pragma once

#include <string>
#include <string_view>

#include "core/theory/collectives.h"
#include "core/theory/gpu_profile.h"

namespace dtl::theory {

enum class NcclAlgo { ring, tree, nvls };
enum class NcclProto { ll, ll128, simple };
const char* nccl_algo_name(NcclAlgo a);
const char* nccl_proto_name(NcclProto p);
NcclAlgo parse_nccl_algo(std::string_view name);  // throws UsageError
NcclProto parse_nccl_proto(std::string_view name);

// What a protocol does to one message on a link (an emulated link carries it so, the lab's
// formulas time it so):
//   wire bytes per data byte   LL 2 (8-byte lines: 4 bytes of data, a 4-byte flag),
//                              LL128 128/120 (120 bytes of data and an 8-byte flag per line), Simple 1
//   latency per hop            NCCL's ring hop latency of the protocol over Simple's, on NVLink
//                              (LL 0.6/3.4, LL128 1.9/3.4) or the network (2.7/14, 4.0/14):
//                              Simple pays fences and a full handshake, LL a flag per line.
double nccl_wire_factor(NcclProto p);
double nccl_hop_latency_ratio(NcclProto p, bool network);

// Where one communicator runs: its ranks, their nodes, and the GPU's tiers (gpu_profile.h).
struct NcclFabric {
  int ranks = 1, nodes = 1;  // ranks spread evenly: ranks / nodes per node
  GpuArch arch = GpuArch::ampere;
  LinkTier nvlink, network;
  bool nvls = false;      // NVSwitch 3 with NVLink SHARP (H100, H200)
  int channels = 16;      // NCCL's channels (caps per channel apply to LL128 and tree)
  int nics_per_node = 0;  // 0: one NIC per GPU on the node
  int ranks_per_node() const { return nodes > 0 ? ranks / nodes : ranks; }
};
// A fabric for `ranks` ranks of `profile`, `per_node` of them on each node.
NcclFabric nccl_fabric(const GpuProfile& profile, int ranks, int per_node);

struct NcclCost {
  bool supported = false;  // the algorithm runs this collective on this fabric
  double latency_s = 0, algbw_Bps = 0;
  double time_s = 0;  // latency + bytes / algbw
};
NcclCost nccl_cost(CollectiveKind c, double bytes, const NcclFabric& f, NcclAlgo a, NcclProto p);

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  double time_s = 0;
  std::string why;  // "ring/LL128: 41.0 µs, next tree/LL 52.3 µs"
};
// The fastest (algo, proto) for this call; a single rank costs nothing (time 0).
NcclChoice nccl_choose(CollectiveKind c, double bytes, const NcclFabric& f);
double nccl_time(CollectiveKind c, double bytes, const NcclFabric& f);  // nccl_choose(...).time_s

// nccl-tests' bus bandwidth for that call: bytes / time · busbw_factor(c, ranks).
double nccl_bus_bandwidth(CollectiveKind c, double bytes, const NcclFabric& f);

}  // namespace dtl::theory
