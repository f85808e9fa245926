#include "core/trace/chunk_state.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace dtl {

ChunkState::ChunkState(int ranks, int chunks)
    : ranks_(ranks), chunks_(chunks), words_((std::size_t(ranks) + 63) / 64),
      bits_(std::size_t(ranks) * std::size_t(chunks) * words_, 0) {
  DTL_CHECK(ranks >= 1 && chunks >= 1, "ChunkState needs at least one rank and one chunk");
  for (int r = 0; r < ranks; ++r)
    for (int c = 0; c < chunks; ++c) bits_[index(r, c) + std::size_t(r) / 64] |= 1ull << (r % 64);
}

void ChunkState::apply(const Event& e) {
  if (e.kind != EventKind::recv || e.chunk < 0) return;
  if (e.rank < 0 || e.rank >= ranks_ || e.peer < 0 || e.peer >= ranks_) return;
  const int first = std::clamp(int(e.chunk), 0, chunks_), last = std::clamp(int(e.chunk) + int(e.chunk_count), 0, chunks_);
  for (int c = first; c < last; ++c) {
    std::uint64_t* dst = &bits_[index(e.rank, c)];
    const std::uint64_t* src = &bits_[index(e.peer, c)];
    for (std::size_t w = 0; w < words_; ++w) dst[w] = (e.flags & kFlagReduce) ? (dst[w] | src[w]) : src[w];
  }
}

int ChunkState::count(int rank, int chunk) const {
  int n = 0;
  for (std::size_t w = 0; w < words_; ++w) n += std::popcount(bits_[index(rank, chunk) + w]);
  return n;
}

bool ChunkState::holds(int rank, int chunk, int contributor) const {
  return (bits_[index(rank, chunk) + std::size_t(contributor) / 64] >> (contributor % 64)) & 1u;
}

std::vector<Event> transfers_in_order(const std::vector<Event>& events) {
  std::vector<Event> out;
  for (const Event& e : events)
    if (e.kind == EventKind::recv) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.end_ns != b.end_ns ? a.end_ns < b.end_ns : a.rank < b.rank;
  });
  return out;
}

const std::vector<Event>& LandingOrder::update(const std::vector<Event>& events) {
  for (const Event& e : transfers_in_order(events)) {
    // A transfer without a flow id (none in a stepped run) is known by its receiver and start.
    const std::uint64_t key = e.flow_id ? e.flow_id : (1ull << 63) ^ (std::uint64_t(e.rank) << 48) ^ std::uint64_t(e.begin_ns);
    if (seen_.insert(key).second) order_.push_back(e);
  }
  return order_;
}

RunMarks run_marks(const std::vector<Event>& events, int ranks, const std::function<bool(const Event&)>& is_run_start) {
  RunMarks m;
  m.by_rank.resize(std::size_t(std::max(0, ranks)));
  for (const Event& e : events)
    if (e.kind == EventKind::mark && e.rank >= 0 && e.rank < ranks && is_run_start(e)) m.by_rank[std::size_t(e.rank)].push_back(&e);
  for (auto& v : m.by_rank)
    std::stable_sort(v.begin(), v.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
  return m;
}

int run_of(const RunMarks& marks, const Event& recv) {
  if (recv.rank < 0 || recv.rank >= int(marks.by_rank.size())) return -1;
  const auto& v = marks.by_rank[std::size_t(recv.rank)];
  return int(std::upper_bound(v.begin(), v.end(), recv.end_ns, [](std::int64_t t, const Event* m) { return t < m->begin_ns; }) -
             v.begin()) - 1;
}

}  // namespace dtl
