// How a buffer of n elements is cut into `parts` chunks: the one index rule every
// collective, shard and bucket uses (llm.c's ShardInfo). The first n % parts chunks get
// one extra element, so sizes differ by at most one and any n works.
#pragma once

#include <cstddef>

namespace dtl {

struct ChunkRange {
  std::size_t offset = 0;  // in elements
  std::size_t count = 0;
};

inline ChunkRange chunk_range(std::size_t n, int parts, int index) {
  const std::size_t p = std::size_t(parts), i = std::size_t(index);
  const std::size_t base = n / p, extra = n % p;
  return {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

// Python-style modulo for ring arithmetic: mod(-1, 4) == 3.
inline int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace dtl
