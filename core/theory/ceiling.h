// Honest ceilings for an all-reduce: the least memory traffic it must cause, divided by
// the most bytes per second the machine's memory moved in a measurement with as many
// threads as ranks. A ceiling is a bound no run may exceed; a run above 100 % of it means
// the derivation (or the bandwidth measurement) is wrong, never that the code is fast.
//
//   threads backend (P ranks, one address space): every rank's output depends on every
//     input, so each of the P inputs is read at least once and each of the P outputs is
//     written at least once: traffic >= 2·P·N bytes.
//   Open MPI over shared memory (P processes): a rank cannot read another's buffer in
//     place; each byte that crosses processes is copied once at least (CMA single copy:
//     read + write). An all-reduce must deliver >= 2(P-1)/P·N bytes to every rank
//     (Patarasuk & Yuan's bandwidth bound), so traffic >= 2·2(P-1)/P·N·P = 4(P-1)·N, and
//     never less than the threads bound.
//
// time >= traffic / BW, algbw = N / time, busbw = algbw · 2(P-1)/P (nccl-tests).
#pragma once

#include <string_view>

namespace dtl::theory {

enum class Transport { shared_address_space, mpi_shared_memory };
std::string_view transport_name(Transport t);

// Least bytes of memory traffic (read + written) an all-reduce of N bytes over P ranks
// causes on `t`, for the whole machine.
double all_reduce_min_traffic_bytes(Transport t, int P, double N);

// The busbw an all-reduce of N bytes would reach if it moved exactly its least traffic at
// `bw` bytes/s; it does not depend on N (both scale with it).
double all_reduce_ceiling_busbw(Transport t, int P, double bw);

// "traffic = 2·P·N" or "traffic = 4(P-1)·N": the footer's derivation, in words.
std::string_view all_reduce_traffic_formula(Transport t);

}  // namespace dtl::theory
