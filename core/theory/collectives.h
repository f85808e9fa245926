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
// where P' is the largest power of two <= P.
#pragma once

#include <string>
#include <string_view>

#include "core/trace/vocab.h"

namespace dtl::theory {

// Collectives and algorithms are the trace's CollectiveKind and AlgorithmKind
// (core/trace/vocab.h, with their names as text); the formulas take the lab algorithms
// naive, ring, tree and rhd.

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
