#include "core/theory/ceiling.h"

#include <algorithm>

#include "core/theory/collectives.h"

namespace dtl::theory {

std::string_view transport_name(Transport t) {
  return t == Transport::shared_address_space ? "one address space (threads)" : "Open MPI shared memory (processes)";
}

double all_reduce_min_traffic_bytes(Transport t, int P, double N) {
  if (P <= 1) return 0;
  const double read_inputs_write_outputs = 2.0 * P * N;
  if (t == Transport::shared_address_space) return read_inputs_write_outputs;
  const double copied_between_processes = 2.0 * (2.0 * (P - 1) / P * N) * P;  // each received byte: read + write
  return std::max(read_inputs_write_outputs, copied_between_processes);
}

double all_reduce_ceiling_busbw(Transport t, int P, double bw) {
  if (P <= 1) return 0;
  const double N = 1.0;
  const double min_time = all_reduce_min_traffic_bytes(t, P, N) / bw;
  return N / min_time * busbw_factor(CollectiveKind::all_reduce, P);
}

std::string_view all_reduce_traffic_formula(Transport t) {
  return t == Transport::shared_address_space
             ? "2·P·N (each input read once, each output written once)"
             : "4(P-1)·N (2(P-1)/P·N received per rank, each byte copied: read + write)";
}

}  // namespace dtl::theory
