// Reference solutions of the experts lab's exercises (exercises/experts.h).
#include "exercises/experts.h"

// A call between two of these functions puts the name in parentheses, `(f)(args)`: it then
// means this file's f only (exercises/track/reference_copy.cmake compiles this file again as dtl::ref).

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dtl::ex {

namespace {

// One token's softmax, computed from its largest logit (no overflow).
void softmax_row(const float* logits, int n, float* out) {
  const float top = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int e = 0; e < n; ++e) sum += out[e] = std::exp(logits[e] - top);
  for (int e = 0; e < n; ++e) out[e] = float(out[e] / sum);
}

std::size_t token_of(int slot, int top_k) { return std::size_t(slot / top_k); }

}  // namespace

Routing route_top_k(const float* logits, int tokens, int experts, int k) {
  if (experts < 1 || k < 1 || k > experts || tokens < 0)
    throw UsageError("top-k routing needs 1 <= k <= experts (k " + std::to_string(k) + ", " + std::to_string(experts) +
                     " experts)");
  Routing r{tokens, experts, k, {}, {}, std::vector<float>(std::size_t(tokens) * std::size_t(experts))};
  std::vector<int> order(static_cast<std::size_t>(experts));
  for (int t = 0; t < tokens; ++t) {
    float* p = r.probs.data() + std::size_t(t) * std::size_t(experts);
    softmax_row(logits + std::size_t(t) * std::size_t(experts), experts, p);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [p](int a, int b) { return p[a] > p[b]; });  // ties: lower first
    for (int j = 0; j < k; ++j) r.expert.push_back(order[std::size_t(j)]), r.weight.push_back(p[order[std::size_t(j)]]);
  }
  return r;
}

std::vector<std::uint8_t> kept_slots(const Routing& r, int capacity) {
  std::vector<std::uint8_t> kept(r.expert.size(), 0);
  std::vector<int> used(std::size_t(r.experts), 0);
  for (int j = 0; j < r.top_k; ++j)  // every first choice before any second choice
    for (int t = 0; t < r.tokens; ++t) {
      const std::size_t slot = std::size_t(t) * std::size_t(r.top_k) + std::size_t(j);
      int& n = used[std::size_t(r.expert[slot])];
      if (n < capacity) kept[slot] = 1, ++n;
    }
  return kept;
}

Dispatch plan_dispatch(const Routing& r, const std::vector<std::uint8_t>& kept, int ranks) {
  if (ranks < 1 || r.experts % ranks != 0)
    throw UsageError("expert parallelism over " + std::to_string(ranks) + " ranks needs the " +
                     std::to_string(r.experts) + " experts to split evenly");
  const int per_rank = r.experts / ranks;
  Dispatch d;
  d.ranks = ranks;
  d.tokens_to_rank.assign(std::size_t(ranks), 0);
  d.tokens_per_expert.assign(std::size_t(r.experts), 0);
  for (std::size_t slot = 0; slot < r.expert.size(); ++slot) {
    if (!kept[slot]) {
      ++d.dropped;
      continue;
    }
    d.send_order.push_back(int(slot));
    ++d.tokens_per_expert[std::size_t(r.expert[slot])];
    ++d.tokens_to_rank[std::size_t(r.expert[slot] / per_rank)];
  }
  // Rank, then expert, then token (slot order is token order, and the sort is stable):
  // sorting by expert sorts by rank too, since a rank's experts are consecutive.
  std::stable_sort(d.send_order.begin(), d.send_order.end(),
                   [&r](int a, int b) { return r.expert[std::size_t(a)] < r.expert[std::size_t(b)]; });
  d.first_row_of_rank.assign(std::size_t(ranks), 0);
  for (int q = 1; q < ranks; ++q)
    d.first_row_of_rank[std::size_t(q)] =
        d.first_row_of_rank[std::size_t(q - 1)] + d.tokens_to_rank[std::size_t(q - 1)];
  return d;
}

void combine_rows(const float* back, int hidden, const Dispatch& d, const Routing& r, float* out) {
  const std::size_t h = std::size_t(hidden);
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    const int slot = d.send_order[i];
    const float w = r.weight[std::size_t(slot)];
    float* row = out + token_of(slot, r.top_k) * h;
    for (std::size_t c = 0; c < h; ++c) row[c] += w * back[i * h + c];
  }
}

void combine_backward(const float* back, const float* dout, int hidden, const Dispatch& d, const Routing& r,
                      float* d_back, float* d_weight) {
  const std::size_t h = std::size_t(hidden);
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    const int slot = d.send_order[i];
    const float w = r.weight[std::size_t(slot)];
    const float* g = dout + token_of(slot, r.top_k) * h;
    double dot = 0;
    for (std::size_t c = 0; c < h; ++c) {
      d_back[i * h + c] = w * g[c];
      dot += double(back[i * h + c]) * double(g[c]);
    }
    d_weight[std::size_t(slot)] = float(dot);
  }
}

}  // namespace dtl::ex
