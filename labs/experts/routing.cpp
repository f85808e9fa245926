// Mixture-of-experts routing and the dispatch layout (routing.h).
#include "labs/experts/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dtl::moe {

namespace {

// One token's softmax, computed from its largest logit (no overflow).
void softmax_row(const float* logits, int n, float* out) {
  const float top = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int e = 0; e < n; ++e) sum += out[e] = std::exp(logits[e] - top);
  for (int e = 0; e < n; ++e) out[e] = float(out[e] / sum);
}

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

int expert_capacity(int tokens, int experts, int k, double capacity_factor) {
  if (!(capacity_factor > 0)) throw UsageError("the capacity factor must be above 0");
  return std::max(1, int(std::ceil(capacity_factor * k * double(tokens) / experts)));
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

int rank_of_expert(int expert, int experts, int ep) { return expert / (experts / ep); }

Dispatch plan_dispatch(const Routing& r, const std::vector<std::uint8_t>& kept, int ep) {
  if (ep < 1 || r.experts % ep != 0)
    throw UsageError("expert parallelism over " + std::to_string(ep) + " ranks needs the " + std::to_string(r.experts) +
                     " experts to split evenly");
  Dispatch d;
  d.ranks = ep;
  d.tokens_to_rank.assign(std::size_t(ep), 0);
  d.tokens_per_expert.assign(std::size_t(r.experts), 0);
  for (std::size_t slot = 0; slot < r.expert.size(); ++slot) {
    if (!kept[slot]) {
      ++d.dropped;
      continue;
    }
    d.send_order.push_back(int(slot));
    ++d.tokens_per_expert[std::size_t(r.expert[slot])];
    ++d.tokens_to_rank[std::size_t(rank_of_expert(r.expert[slot], r.experts, ep))];
  }
  // Rank, then expert, then token (slot order is token order): experts of one rank are
  // contiguous, so the receiver can run each expert on one block of rows.
  std::stable_sort(d.send_order.begin(), d.send_order.end(),
                   [&r](int a, int b) { return r.expert[std::size_t(a)] < r.expert[std::size_t(b)]; });
  return d;
}

AllToAllvLayout dispatch_layout(const Dispatch& d, const std::vector<std::size_t>& recv_tokens, int hidden) {
  std::vector<std::size_t> send(d.tokens_to_rank), recv(recv_tokens);
  for (std::size_t& n : send) n *= std::size_t(hidden);
  for (std::size_t& n : recv) n *= std::size_t(hidden);
  return packed_all_to_allv(std::move(send), std::move(recv));
}

void gather_rows(const float* x, int hidden, const Dispatch& d, int top_k, float* send) {
  const std::size_t h = std::size_t(hidden);
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    const float* row = x + std::size_t(d.send_order[i] / top_k) * h;
    std::copy(row, row + h, send + i * h);
  }
}

void combine_rows(const float* back, int hidden, const Dispatch& d, const Routing& r, float* out) {
  const std::size_t h = std::size_t(hidden);
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    const int slot = d.send_order[i];
    const float w = r.weight[std::size_t(slot)];
    float* row = out + std::size_t(slot / r.top_k) * h;
    for (std::size_t c = 0; c < h; ++c) row[c] += w * back[i * h + c];
  }
}

double load_balancing_loss(const Routing& r) {
  if (r.tokens == 0) return 0;
  std::vector<double> routed(std::size_t(r.experts), 0), mean_prob(std::size_t(r.experts), 0);
  for (int e : r.expert) routed[std::size_t(e)] += 1;
  for (int t = 0; t < r.tokens; ++t)
    for (int e = 0; e < r.experts; ++e) mean_prob[std::size_t(e)] += r.probs[std::size_t(t) * std::size_t(r.experts) + std::size_t(e)];
  double loss = 0;
  for (int e = 0; e < r.experts; ++e)
    loss += routed[std::size_t(e)] / (double(r.tokens) * r.top_k) * (mean_prob[std::size_t(e)] / r.tokens);
  return r.experts * loss;
}

}  // namespace dtl::moe
