// Mixture-of-experts routing and the dispatch layout (routing.h).
#include "labs/experts/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dtl::moe {

int expert_capacity(int tokens, int experts, int k, double capacity_factor) {
  if (!(capacity_factor > 0)) throw UsageError("the capacity factor must be above 0");
  return std::max(1, int(std::ceil(capacity_factor * k * double(tokens) / experts)));
}

int rank_of_expert(int expert, int experts, int ep) { return expert / (experts / ep); }

AllToAllvLayout dispatch_layout(const Dispatch& d, const std::vector<std::size_t>& recv_tokens, int hidden) {
  const std::size_t h = std::size_t(hidden), P = recv_tokens.size();
  if (d.tokens_to_rank.size() != P || d.first_row_of_rank.size() != P)
    throw Error("the dispatch plan has " + std::to_string(d.tokens_to_rank.size()) + " send counts and " +
                std::to_string(d.first_row_of_rank.size()) + " first rows for " + std::to_string(P) + " ranks");
  // The send side is the plan's (its counts and where each rank's block starts); the
  // receive side packs what each rank sends here in rank order.
  AllToAllvLayout l = packed_all_to_allv(std::vector<std::size_t>(P, 0), recv_tokens);
  for (std::size_t q = 0; q < P; ++q) {
    l.send_counts[q] = d.tokens_to_rank[q] * h;
    l.send_displs[q] = d.first_row_of_rank[q] * h;
    l.recv_counts[q] *= h, l.recv_displs[q] *= h;
  }
  return l;
}

void gather_rows(const float* x, int hidden, const Dispatch& d, int top_k, float* send) {
  const std::size_t h = std::size_t(hidden);
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    const float* row = x + std::size_t(d.send_order[i] / top_k) * h;
    std::copy(row, row + h, send + i * h);
  }
}

void gather_rows_backward(const float* d_send, int hidden, const Dispatch& d, int top_k, float* dx) {
  const std::size_t h = std::size_t(hidden);
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    float* row = dx + std::size_t(d.send_order[i] / top_k) * h;
    for (std::size_t c = 0; c < h; ++c) row[c] += d_send[i * h + c];
  }
}

AllToAllvLayout reversed(const AllToAllvLayout& l) {
  return {l.recv_counts, l.recv_displs, l.send_counts, l.send_displs};
}

double load_balancing_loss(const Routing& r) {
  if (r.tokens == 0) return 0;
  std::vector<double> routed(std::size_t(r.experts), 0), mean_prob(std::size_t(r.experts), 0);
  for (int e : r.expert) routed[std::size_t(e)] += 1;
  for (int t = 0; t < r.tokens; ++t)
    for (int e = 0; e < r.experts; ++e)
      mean_prob[std::size_t(e)] += r.probs[std::size_t(t) * std::size_t(r.experts) + std::size_t(e)];
  double loss = 0;
  for (int e = 0; e < r.experts; ++e)
    loss += routed[std::size_t(e)] / (double(r.tokens) * r.top_k) * (mean_prob[std::size_t(e)] / r.tokens);
  return r.experts * loss;
}

void load_balancing_grad(const Routing& r, double scale, float* dprobs) {
  if (r.tokens == 0) return;
  std::vector<double> routed(std::size_t(r.experts), 0);
  for (int e : r.expert) routed[std::size_t(e)] += 1;
  for (int e = 0; e < r.experts; ++e) {
    const double f = routed[std::size_t(e)] / (double(r.tokens) * r.top_k);
    const float g = float(scale * r.experts * f / r.tokens);
    for (int t = 0; t < r.tokens; ++t) dprobs[std::size_t(t) * std::size_t(r.experts) + std::size_t(e)] += g;
  }
}

void softmax_backward(const Routing& r, const float* dprobs, float* dlogits) {
  const std::size_t E = std::size_t(r.experts);
  for (std::size_t t = 0; t < std::size_t(r.tokens); ++t) {
    const float* p = r.probs.data() + t * E;
    const float* dp = dprobs + t * E;
    double dot = 0;
    for (std::size_t e = 0; e < E; ++e) dot += double(p[e]) * double(dp[e]);
    for (std::size_t e = 0; e < E; ++e) dlogits[t * E + e] = float(double(p[e]) * (double(dp[e]) - dot));
  }
}

}  // namespace dtl::moe
