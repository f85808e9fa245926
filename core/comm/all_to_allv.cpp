// The variable all-to-all's layout (all_to_allv.h).
#include "core/comm/all_to_allv.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dtl {

namespace {

std::size_t extent(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs) {
  std::size_t end = 0;
  for (std::size_t q = 0; q < counts.size() && q < displs.size(); ++q) end = std::max(end, displs[q] + counts[q]);
  return end;
}

std::vector<std::size_t> exclusive_sums(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> displs(counts.size(), 0);
  for (std::size_t q = 1; q < counts.size(); ++q) displs[q] = displs[q - 1] + counts[q - 1];
  return displs;
}

}  // namespace

std::size_t AllToAllvLayout::send_extent() const { return extent(send_counts, send_displs); }
std::size_t AllToAllvLayout::recv_extent() const { return extent(recv_counts, recv_displs); }
std::size_t AllToAllvLayout::sent() const {
  return std::accumulate(send_counts.begin(), send_counts.end(), std::size_t(0));
}
std::size_t AllToAllvLayout::sent_to_others(int me) const {
  return sent() - (std::size_t(me) < send_counts.size() ? send_counts[std::size_t(me)] : 0);
}

std::size_t AllToAllvLayout::received_from_others(int me) const {
  const std::size_t all = std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t(0));
  return all - (std::size_t(me) < recv_counts.size() ? recv_counts[std::size_t(me)] : 0);
}

AllToAllvLayout packed_all_to_allv(std::vector<std::size_t> send_counts, std::vector<std::size_t> recv_counts) {
  AllToAllvLayout l;
  l.send_displs = exclusive_sums(send_counts);
  l.recv_displs = exclusive_sums(recv_counts);
  l.send_counts = std::move(send_counts);
  l.recv_counts = std::move(recv_counts);
  return l;
}

void check_all_to_allv_layout(const AllToAllvLayout& l, int ranks) {
  const std::size_t n = std::size_t(ranks);
  if (l.send_counts.size() != n || l.send_displs.size() != n || l.recv_counts.size() != n || l.recv_displs.size() != n)
    throw Error(
        "all_to_allv needs one send count, send displacement, receive count and receive displacement per rank (" +
        std::to_string(ranks) + " ranks; got " + std::to_string(l.send_counts.size()) + ", " +
        std::to_string(l.send_displs.size()) + ", " + std::to_string(l.recv_counts.size()) + ", " +
        std::to_string(l.recv_displs.size()) + ")");
}

}  // namespace dtl
