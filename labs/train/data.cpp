#include "labs/train/data.h"

#include <algorithm>
#include <random>

namespace dtl {

Dataset make_teacher_data(const MlpShape& shape, int samples, std::uint32_t seed) {
  MemoryTracker scratch(0, nullptr);
  Mlp teacher(shape, scratch, seed ^ 0x5eedu);  // on the host, whatever device the students use
  Dataset d;
  d.samples = samples;
  d.in = shape.in;
  d.out = shape.out;
  d.x.resize(std::size_t(samples) * std::size_t(shape.in));
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto& v : d.x) v = n(rng);
  d.y.resize(std::size_t(samples) * std::size_t(shape.out));
  for (int r0 = 0; r0 < samples; r0 += kTeacherChunk) {  // each row on its own: chunks bound the activations
    const int rows = std::min(kTeacherChunk, samples - r0);
    const float* y = teacher.forward(d.x_row(r0), rows);
    std::copy(y, y + std::size_t(rows) * std::size_t(shape.out), d.y.begin() + std::ptrdiff_t(r0) * shape.out);
  }
  return d;
}

}  // namespace dtl
