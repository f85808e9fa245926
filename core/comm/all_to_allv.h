// The layout of a variable all-to-all (MPI_Alltoallv): how many elements go to each rank and
// come from each, and where they sit in the send and receive buffers. A mixture-of-experts
// layer dispatches its tokens with it (each rank sends every other rank the tokens routed to
// that rank's experts, a different number each step) and combines them with the reverse one.
#pragma once

#include <cstddef>
#include <vector>

namespace dtl {

struct AllToAllvLayout {
  // Per peer rank, in elements of the call's dtype: to rank q go send_counts[q] elements from
  // element send_displs[q] of the send buffer; from rank q come recv_counts[q] elements, to
  // element recv_displs[q] of the receive buffer. Rank q's send_counts[me] must equal my
  // recv_counts[q] (the backends say which pair disagrees).
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;

  std::size_t send_extent() const;  // elements the send buffer must hold: max(displ + count)
  std::size_t recv_extent() const;
  std::size_t sent() const;  // elements this rank sends, its own block included
  std::size_t sent_to_others(int me) const;
  std::size_t received_from_others(int me) const;
};

// Blocks packed in rank order: each displacement the sum of the counts before it.
AllToAllvLayout packed_all_to_allv(std::vector<std::size_t> send_counts, std::vector<std::size_t> recv_counts);

// Throws Error unless each of the four vectors has one entry per rank of a group of `ranks`.
void check_all_to_allv_layout(const AllToAllvLayout& layout, int ranks);

}  // namespace dtl
