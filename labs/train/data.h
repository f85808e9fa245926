// Synthetic training data with no download: a regression task from a fixed random teacher
// MLP. Inputs ~ N(0, 1), targets = teacher(x); the same seed gives the same data on every
// rank and every run, so N ranks can be checked against one.
#pragma once

#include <cstdint>
#include <vector>

#include "labs/train/mlp.h"

namespace dtl {

struct Dataset {
  int samples = 0, in = 0, out = 0;
  std::vector<float> x, y;  // host memory, row-major
  const float* x_row(int i) const { return x.data() + std::size_t(i) * std::size_t(in); }
  const float* y_row(int i) const { return y.data() + std::size_t(i) * std::size_t(out); }
};

// The teacher runs kTeacherChunk rows at a time, so its activations stay small however many
// samples are made.
inline constexpr int kTeacherChunk = 4096;
Dataset make_teacher_data(const MlpShape& shape, int samples, std::uint32_t seed);

// The GPT's synthetic next-token task (the tensor-parallel and grid labs): each of `batch`
// sequences counts up from a random start by a random stride 1..3 modulo `vocab` (a
// pattern attention can pick up), drawn for training step `step` from a fixed seed;
// targets are the next tokens. Laid out [seq][batch] (row s·batch + b), as the GPT takes them.
void counting_batch(int step, int seq, int batch, int vocab, std::vector<int>& tokens, std::vector<int>& targets);

}  // namespace dtl
