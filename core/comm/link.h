// An emulated interconnect for the threads backend: what each transfer between two
// thread ranks would cost on a real link, by the α-β model (latency α plus bytes/β), per
// direction, with concurrent transfers of one rank queuing on its link.
//
//   dtlab run collectives --link pcie4 ...          # a preset
//   dtlab run collectives --link-bw 25 --link-latency 5 ...   # GB/s per direction, µs
//
// Bandwidths per direction from the curriculum: NVLink 4 (H100) 900 GB/s bidirectional,
// NVLink 3 (A100) 600 GB/s bidirectional, PCIe 5 64 GB/s, PCIe 4 32 GB/s, InfiniBand NDR
// 400 Gb/s, HDR 200 Gb/s, Ethernet 100 Gb/s. Latencies are typical orders of magnitude
// (not from the curriculum): about 2 µs for NVLink, 5 µs for PCIe and InfiniBand, 20 µs
// for Ethernet.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/theory/nccl_model.h"

namespace dtl {

struct LinkSpec {
  std::string name;           // "pcie4", or "custom"
  double bandwidth_GBps = 0;  // per direction, GB = 1e9 bytes; 0 = no emulation
  double latency_us = 0;      // per message, under NCCL's Simple protocol
  bool network = false;       // a NIC (ib-*, eth*): the network's protocol latencies apply
  // --protocol: how messages travel (theory::nccl_wire_factor, nccl_hop_latency_ratio).
  theory::NcclProto protocol = theory::NcclProto::simple;
  bool active() const { return bandwidth_GBps > 0; }
  // What one message pays, and the data rate, under the protocol: every transfer the link
  // emulates and every formula the labs set beside it use these two.
  double alpha_s() const { return latency_us * 1e-6 * theory::nccl_hop_latency_ratio(protocol, network); }
  double beta_Bps() const { return bandwidth_GBps * 1e9 / theory::nccl_wire_factor(protocol); }
};

const std::vector<LinkSpec>& link_presets();
// A preset by name, or UsageError listing them.
LinkSpec find_link(std::string_view name);
// From the command line: a preset, or explicit bandwidth/latency (bandwidth > 0), made
// `slowdown` times slower (latency × slowdown, bandwidth ÷ slowdown; 1 = as is).
//
// Why slow a link down: a CPU core computes about 1000× slower than a GPU while memory
// copies are only about 10× slower than NVLink, so on a laptop a real link makes
// communication look free. Slowing the link by the factor the compute is slowed keeps a
// GPU's compute-to-communication ratio, which is what the DDP milestones are about.
LinkSpec make_link(const std::string& preset, double bandwidth_GBps, double latency_us, double slowdown = 1.0);
// --protocol NAME (LL, LL128, Simple; any case) on `links` (the run's one, or both tiers); throws
// UsageError when there is no emulated link for it to change.
void set_protocol(std::string_view name, LinkSpec& link, LinkSpec* inter = nullptr);

// A two-tier cluster (--topology): `nodes` nodes of `gpus_per_node` ranks, numbered node by
// node (rank / gpus_per_node is the node, as Megatron and torchrun place ranks), the run's
// LinkSpec between the ranks of one node (NVLink) and `inter` between nodes (one NIC per GPU,
// a rail: the GPUs of a node cross to other nodes in parallel, each on its own NIC).
// gpus_per_node = 0: one tier, every pair of ranks on the run's one link.
struct NodeLayout {
  int nodes = 0;
  int gpus_per_node = 0;
  LinkSpec inter;
  bool two_tier() const { return gpus_per_node > 0; }
  int node_of(int rank) const { return two_tier() ? rank / gpus_per_node : 0; }
};

// What a message from rank a to rank b travels on.
inline const LinkSpec& link_between(const LinkSpec& intra, const NodeLayout& n, int a, int b) {
  return n.node_of(a) == n.node_of(b) ? intra : n.inter;
}

struct ClusterLinks {
  LinkSpec intra;  // within a node
  NodeLayout layout;
};

// "nodes=2,gpus=4,intra=nvlink4,inter=ib-ndr" (intra and inter: --link presets; both or
// neither — without them the layout only groups ranks, as under MPI), each link made
// `slowdown` times slower. Throws UsageError naming the key that is missing, unknown or wrong.
ClusterLinks parse_topology(std::string_view text, double slowdown = 1.0);

}  // namespace dtl
