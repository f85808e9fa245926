// Reference solutions of the context-parallel exercises (exercises/context_parallel.h).
#include "exercises/context_parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace dtl::ex {

void online_softmax_merge(float* o, float* m, float* l, const float* o2, const float* m2, const float* l2, int pairs,
                          int d) {
  for (int p = 0; p < pairs; ++p) {
    const float top = std::max(m[p], m2[p]);
    if (top == -std::numeric_limits<float>::infinity()) continue;  // neither side has seen a key
    // exp(−∞ − top) is 0: a side that has seen nothing adds nothing (and no NaN from −∞ − −∞).
    const float a = m[p] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m[p] - top);
    const float b = m2[p] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m2[p] - top);
    l[p] = a * l[p] + b * l2[p];
    float* y = o + std::size_t(p) * std::size_t(d);
    const float* y2 = o2 + std::size_t(p) * std::size_t(d);
    for (int f = 0; f < d; ++f) y[f] = a * y[f] + b * y2[f];
    m[p] = top;
  }
}

std::vector<int> zigzag_partition(int seq, int ranks, int rank) {
  const int chunk = seq / (2 * ranks);
  std::vector<int> positions;
  for (int c : {rank, 2 * ranks - 1 - rank})  // rank < 2P − 1 − rank: already ascending
    for (int p = c * chunk; p < (c + 1) * chunk; ++p) positions.push_back(p);
  return positions;
}

void ring_step(Comm& comm, std::vector<float>& current, std::vector<float>& next, int tag, const TransferInfo& info,
               bool last, const std::function<void(const float*)>& compute) {
  if (last) return compute(current.data());
  const int P = comm.size(), r = comm.rank();
  const std::size_t bytes = current.size() * sizeof(float);
  Request send = comm.isend(current.data(), bytes, (r + 1) % P, tag, info);
  Request recv = comm.irecv(next.data(), bytes, (r - 1 + P) % P, tag, info);
  compute(current.data());  // the hop travels meanwhile
  send.wait();              // the send reads `current` until here
  recv.wait();
  std::swap(current, next);
}

}  // namespace dtl::ex
