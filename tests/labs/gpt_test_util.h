// Shared by the GPT tests (CPU, tensor-parallel, GPU): token ids for a test batch, and the
// worst per-tensor difference of two sets of full tensors.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
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

// Full tensors by name (Gpt::full_tensor of every tensor).
using Named = std::map<std::string, std::vector<float>>;

// Largest |a − b| of a tensor relative to the largest |b| of it, over all tensors; names the worst.
inline double worst_relative(const Named& got, const Named& want, std::string& worst_name) {
  double worst = 0;
  for (const auto& [name, w] : want) {
    const std::vector<float>& g = got.at(name);
    double diff = 0, scale = 1e-12;
    for (std::size_t i = 0; i < w.size(); ++i) {
      diff = std::max(diff, std::fabs(double(g[i]) - double(w[i])));
      scale = std::max(scale, std::fabs(double(w[i])));
    }
    if (diff / scale >= worst) worst = diff / scale, worst_name = name;
  }
  return worst;
}

}  // namespace dtl::test
