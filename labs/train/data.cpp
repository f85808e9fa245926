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

void counting_batch(int step, int seq, int batch, int vocab, std::vector<int>& tokens, std::vector<int>& targets) {
  std::mt19937 gen(2000u + std::uint32_t(step));
  tokens.resize(std::size_t(seq) * std::size_t(batch));
  targets.resize(tokens.size());
  for (int b = 0; b < batch; ++b) {
    const int start = int(gen() % std::uint32_t(vocab)), stride = 1 + int(gen() % 3u);
    for (int t = 0; t < seq; ++t) {
      tokens[std::size_t(t) * std::size_t(batch) + std::size_t(b)] = (start + t * stride) % vocab;
      targets[std::size_t(t) * std::size_t(batch) + std::size_t(b)] = (start + (t + 1) * stride) % vocab;
    }
  }
}

}  // namespace dtl
