// Inputs and the error measure shared by the CPU and the CUDA kernel tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace dtl::test {

inline std::vector<float> random(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Error relative to the tensor's scale, max|a - b| / max|b|: float32 sums that cancel to
// near zero make element-wise relative errors meaningless.
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return worst / scale;
}

}  // namespace dtl::test
