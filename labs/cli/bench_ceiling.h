// `dtlab bench`'s ceiling: the least memory traffic of an all-reduce (core/theory/
// ceiling.h) over the memory bandwidth measured with as many threads as ranks
// (memory_bandwidth.h), or an emulated link's bandwidth. It bounds sizes whose data is
// far larger than the last-level cache; smaller ones run from cache and are not bounded
// by it (the footer says which rows it applies to). The footer prints the derivation.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>

#include "labs/cli/bench_plan.h"
#include "labs/cli/memory_bandwidth.h"

namespace dtl::cli {

// The busbw no all-reduce of this plan may exceed at memory bandwidth `bw` (0 when no
// ceiling is derived: collectives other than all_reduce).
double bench_ceiling_busbw(const BenchPlan& p, const MemoryBandwidth& bw);

// The smallest all-reduce size (bytes per rank) the memory ceiling applies to: all P
// inputs and outputs together at least 4× the last-level cache.
std::uint64_t ceiling_min_bytes(int P);

// Footer lines: the measured bandwidths, the traffic formula, the ceiling, and each
// applicable row's share of it; a row over 100 % is called a ceiling bug. Returns the
// largest share (0 if no row applies).
double print_ceiling_footer(std::ostream& out, const BenchPlan& p, const MemoryBandwidth& bw,
                            const nlohmann::json& rows);

// The ring's own ceiling on thread ranks (a point-to-point ring, sliced or not): each
// reduce-scatter step reads two chunks and writes one (recv_reduce), each all-gather step
// reads one and writes one (a copy), so P ranks × (P-1) steps × (3 + 2)·N/P = 5(P-1)·N
// bytes of traffic; time >= 5(P-1)·N / BW and busbw = N/time · 2(P-1)/P <= 2·BW/(5P).
// A model of the ring's traffic, not of every all-reduce: a slice still in cache when the
// next rank reads it costs no memory traffic, so a sliced ring may pass it (the footer says so).
double ring_ceiling_busbw(int P, double bw);
// Not a bound, what the machine's own kernels reach: the reduce-scatter's 3(P-1)·N bytes at the
// probe's triad rate (two reads and a write per element, as a reduce) and the all-gather's
// 2(P-1)·N at its copy rate: busbw = 2 / (P·(3/triad + 2/copy)).
double ring_busbw_at_kernel_rates(int P, const MemoryBandwidth& bw);
// The footer's line for --impl ring / ring_sliced on thread ranks: the ring ceiling and the
// best applicable row's share of it. Returns the share (0 if none applies).
double print_ring_ceiling(std::ostream& out, const BenchPlan& p, const MemoryBandwidth& bw, const nlohmann::json& rows);

}  // namespace dtl::cli
