#include "core/trace/chunk_state.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace dtl {

ChunkState::ChunkState(int ranks, int chunks)
    : ranks_(ranks),
      chunks_(chunks),
      words_((std::size_t(ranks) + 63) / 64),
      bits_(std::size_t(ranks) * std::size_t(chunks) * words_, 0) {
  DTL_CHECK(ranks >= 1 && chunks >= 1, "ChunkState needs at least one rank and one chunk");
  for (int r = 0; r < ranks; ++r)
    for (int c = 0; c < chunks; ++c) bits_[index(r, c) + std::size_t(r) / 64] |= 1ull << (r % 64);
}

void ChunkState::apply(const Event& e) {
  if (e.kind != EventKind::recv || e.chunk < 0) return;
  if (e.rank < 0 || e.rank >= ranks_ || e.peer < 0 || e.peer >= ranks_) return;
  const int first = std::clamp(int(e.chunk), 0, chunks_),
            last = std::clamp(int(e.chunk) + int(e.chunk_count), 0, chunks_);
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

}  // namespace dtl
