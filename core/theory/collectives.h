// The curriculum's communication formulas as pure functions (no Comm, no I/O).
//
// Conventions: P ranks, N = bytes of the vector being reduced (the per-rank input of
// all-reduce), GB = 1e9 bytes. The α-β model charges each sequential step α seconds of
// latency plus bytes/β of transfer (β in bytes per second).
//
//   algorithm            bytes sent per rank (max)       steps             time
//   ring all-reduce      2(P-1)/P · N                    2(P-1)            2(P-1)α + 2(P-1)/P · N/β
//   recursive halv.-dbl. 2(P'-1)/P' · N (+N if P≠P')     2log2 P' (+2)     steps·α + bytes/β
//   binomial tree        ⌈log2 P⌉ · N                    2⌈log2 P⌉         2⌈log2 P⌉(α + N/β)
//   naive (root)         (P-1) · N                       2(P-1)            2(P-1)(α + N/β)
//   ring in S slices     2(P-1)/P · N  (2(P-1)·S msgs)   2(P-1)            2(P-1)·S·α + 2(P-1)/P · N/β
//   double binary tree   up to 2·N (N/2 up, ≤ 2×N/2 down per tree)  4K   see double_tree_all_reduce_cost
// where P' is the largest power of two <= P.
#pragma once

#include <string>
#include <string_view>

#include "core/trace/vocab.h"

namespace dtl::theory {

// Collectives and algorithms are the trace's CollectiveKind and AlgorithmKind
// (core/trace/vocab.h, with their names as text); the formulas take the lab algorithms
// naive, ring, tree, rhd, ring_sliced and double_tree.

struct Link {
  double alpha_s = 0;   // per-message latency, seconds
  double beta_Bps = 0;  // bandwidth, bytes per second
};

struct CommCost {
  double bytes_per_rank = 0;  // most bytes any one rank sends
  int messages_per_rank = 0;  // most messages any one rank sends
  int steps = 0;              // sequential latency terms
  double time_s = 0;          // α-β time (0 if no link given)
};

int ceil_log2(int p);
int floor_pow2(int p);  // largest power of two <= p

// Throws Error for an AlgorithmKind that is no lab algorithm (none, library).
CommCost all_reduce_cost(AlgorithmKind a, int P, double N, Link link = {});

// The ring pipelined in slices (NCCL's chunk/slice structure): each step's chunk of N/P
// bytes is cut into S slices sent back to back, and slice i goes on to the next step as
// soon as it is reduced, so the reduce of slice i overlaps the transfer of slice i+1.
// Same bytes and steps as the ring, S times the messages. On a link that charges α per
// message (the lab's emulated link: α occupies it) the time is 2(P-1)·S·α + 2(P-1)/P·N/β:
// the link never waits for a whole chunk. (Where α is pure delay, as NCCL's per-hop
// latency, the pipeline pays it about once per step instead: 2(P-1)·α + (2(P-1)+S-1)·N/(P·S·β).)
// all_reduce_cost(AlgorithmKind::ring_sliced, ...) uses S = ring_slices(N / P).
CommCost ring_sliced_all_reduce_cost(int P, double N, int S, Link link = {}, int C = 1);
// NCCL's channels: the buffer split over C channels, each a ring (or a pair of trees) of its
// own over N/C bytes, all running at once. On the emulated link a channel is a connection
// (its messages one after the other) and a rank's channels share its bandwidth but overlap
// their latencies (core/comm/threads/universe.h). The lab's channel algorithms move one
// message per channel at a time, all C together (a round): their latencies overlap (one α),
// their bytes share the link (C·b/β). `rounds` such rounds of b bytes per message:
//   rounds · (α + C·b/β)          (C = 1: rounds · (α + b/β), one message after another)
double channels_time(double rounds, double b, int C, Link link);
// With C channels and S slices of each channel's chunk: 2(P-1)·S·C messages, the ring's bytes
// and steps, time 2(P-1)·S·(α + C·b/β) with b = N/(C·P·S), i.e. 2(P-1)·S·α + 2(P-1)/P·N/β:
// the bandwidth term stays, the latency term counts the slices of one channel's chunk, C
// times fewer when slices keep their size (ring_slices(N/(C·P))).

// Slices per chunk of `chunk_bytes`: about kRingSliceBytes each (small enough that a slice
// just reduced is still in cache when the next rank reads it), 1 to kMaxRingSlices.
inline constexpr double kRingSliceBytes = 256 * 1024;
inline constexpr int kMaxRingSlices = 256;
int ring_slices(double chunk_bytes);

// NCCL's double binary tree (src/graph/trees.cc, ncclGetBtree / ncclGetDtree; Sanders,
// Speck & Träff 2009). Tree 0 is a binary tree over ranks 0..P-1 by their lowest set bit: the
// odd ranks are its leaves, rank 0 its root with one child (the largest power of two < P).
// Tree 1 is tree 0 mirrored (rank r plays P-1-r) when P is even, shifted by one (r plays
// r-1) when P is odd: a rank that is a leaf in one tree is an inner node of the other, so
// the two trees, each carrying half the data, use every rank's links about equally.
struct TreeLinks {
  int parent = -1;             // -1: the root
  int children[2] = {-1, -1};  // -1: none
  int child_count() const { return (children[0] >= 0) + (children[1] >= 0); }
};
TreeLinks binary_tree_links(int P, int rank);            // tree 0
TreeLinks double_tree_links(int P, int rank, int tree);  // tree 0 or 1
// Chunks per half of a double-tree all-reduce of N bytes (pipelined like the ring's slices).
int double_tree_chunks(double N);
// The double binary tree all-reduce of N bytes in K chunks per half (each half N/2 up one
// tree, reduced at its root, then down it): per rank, in each tree, N/2 up to its parent
// (not the root) and N/2 down to each child; messages K per transfer; steps 4K (a tag per
// chunk, direction and tree). Time on a link that α occupies: the busiest
// rank's m·α + B/β, plus the pipeline's fill, 2F chunk hops (double_tree_fill_hops).
// With C channels (a pair of trees each, N/C bytes, K chunks per half): C times the messages,
// the same bytes; time m_c·(α + C·b/β) + 2F·(α + b/β), b = N/(2CK), m_c the busiest
// rank's messages per channel (channels_time).
CommCost double_tree_all_reduce_cost(int P, double N, int K, Link link = {}, int C = 1);
// The fill F of the double tree's pipeline: the first chunk climbs from the deepest leaf to the
// root and comes back down, and a node on the way takes its children's chunks, and sends to
// them, one after the other (α occupies its connection): F = the most, over both trees and every
// rank, of its ancestors' children counted up to the root (log2 P to 2·log2 P).
int double_tree_fill_hops(int P);

// Ring reduce-scatter / all-gather of a vector of N bytes in total: (P-1)/P · N each.
CommCost ring_reduce_scatter_cost(int P, double N, Link link = {});
CommCost ring_all_gather_cost(int P, double N, Link link = {});
CommCost tree_broadcast_cost(int P, double N, Link link = {});

// nccl-tests' bus-bandwidth factor: busbw = algbw · factor. all_reduce 2(P-1)/P,
// reduce_scatter and all_gather (P-1)/P, broadcast and reduce 1, all_to_all (P-1)/P (and
// all_to_allv, whose even layout is all_to_all's); 0 for none and barrier (no bytes).
double busbw_factor(CollectiveKind c, int P);

// Bytes one rank's collective call is about (what algbw divides by): the input for
// all_reduce/broadcast/reduce, the full P·count vector for reduce_scatter/all_gather/all_to_all(v).
double collective_bytes(CollectiveKind c, int P, double count_bytes);

// Ceilings (the least traffic of an all-reduce over memory bandwidth): ceiling.h.

// What a library collective (Comm's all_reduce, reduce_scatter, all_gather, broadcast,
// reduce, all_to_all, barrier, all_to_allv; none costs 0) costs on `link`, with the
// algorithms NCCL uses on a ring: all_reduce 2(P-1)α + 2(P-1)/P·N/β; reduce_scatter and
// all_gather (P-1)α + (P-1)/P·N/β with N the full vector; broadcast and reduce pipelined
// (P-1)α + N/β; all_to_all (P-1)α + (P-1)/P·N/β; barrier 2⌈log2 P⌉α; all_to_allv (P-1)α +
// N/β with N the bytes of the rank's busier direction, out to or in from the others
// (full-duplex links; a hot expert's rank receives more than it sends).
double library_collective_time(CollectiveKind c, int P, double bytes, Link link);

// The same collective over a group spread on `nodes` nodes, `per_node` members on each, as
// NCCL runs it hierarchically with one NIC per GPU (each member's inter-node traffic on its
// own rail, in parallel):
//   all_reduce      RS within the node (N) + all-reduce between nodes (N/G) + AG within (N)
//   reduce_scatter  RS within (N) + RS between (N/G);  all_gather: AG between (N/G) + AG within (N)
//   broadcast, reduce: between nodes, then within;  all_to_all(v): the (nodes−1)/nodes of a
//   member's bytes that leave its node, on its NIC (the rest moves beside it on NVLink);
//   barrier 2⌈log2 P⌉ α_inter.
// nodes = 1 is library_collective_time on `intra`; per_node = 1 the same on `inter`.
double two_tier_collective_time(CollectiveKind c, int nodes, int per_node, double bytes, Link intra, Link inter);

// The hierarchical all-reduce the collectives lab builds from rings (--algo hierarchical):
// ring reduce-scatter inside each node of G ranks, ring all-reduce of each rank's N/G chunk
// between the `nodes` ranks with its local index (its rail), ring all-gather inside the node.
//   bytes per rank   2(G−1)/G·N + 2(n−1)/n·N/G      messages and steps   2(G−1) + 2(n−1)
//   time             2(G−1)·(α_i + N/(G·β_i)) + 2(n−1)·(α_e + N/(G·n·β_e))
// against the flat ring's 2(P−1)/P·N/β_e: the inter-node bytes fall by G, as every rail works.
CommCost hierarchical_all_reduce_cost(int nodes, int G, double N, Link intra = {}, Link inter = {});

// Bytes a rank puts on its link for one library collective of `bytes` over N ranks, as a
// ring moves them (nccl-tests' bus bytes, with the buffer the event records): all_reduce
// 2(N-1)/N, every other collective (N-1)/N.
inline double ring_bus_bytes(CollectiveKind c, double N, double bytes) {
  return (c == CollectiveKind::all_reduce ? 2.0 : 1.0) * (N - 1) / N * bytes;
}

// Time of a ring all-reduce of `bytes` over P ranks on `link`, and the efficiency
// compute / (compute + communication) the curriculum uses for data parallelism.
double ring_all_reduce_time(int P, double bytes, Link link);
double comm_efficiency(double compute_s, double comm_s);

}  // namespace dtl::theory
