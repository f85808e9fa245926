// Shared by the GPT tests (CPU, tensor-parallel, GPU): token ids for a test batch.
#pragma once

#include <random>
#include <vector>

namespace dtl::test {

// n token ids in [0, vocab), the same for the same seed.
inline std::vector<int> random_tokens(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, vocab - 1);
  std::vector<int> t(static_cast<std::size_t>(n));
  for (int& v : t) v = d(rng);
  return t;
}

}  // namespace dtl::test
