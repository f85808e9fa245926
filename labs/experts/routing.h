// Mixture-of-experts routing, and the layout expert parallelism sends tokens with (the
// experts lab of issue 33 builds on these; Shazeer et al. 2017, GShard 2020, Switch 2021):
//
//   router      softmax of each token's logits over E experts; its k largest are its choices,
//               weighted by their probabilities (ties go to the lower expert)
//   capacity    C = ⌈capacity_factor · k · T / E⌉ slots per expert; the choices beyond it are
//               dropped, GShard's order: every token's first choice (tokens in order), then
//               every second choice, ...
//   dispatch    experts split evenly over EP ranks (expert e on rank e / (E/EP)); the kept
//               (token, choice) pairs sent in the order destination rank, expert, token, so
//               all_to_allv's send counts are the kept pairs per rank (core/comm/all_to_allv.h)
//   combine     each returned row added to its token's output times its router weight
//   aux loss    Switch's load-balancing loss E · Σᵢ fᵢ · Pᵢ: fᵢ the share of the T·k choices
//               routed to expert i (before capacity), Pᵢ its mean router probability; 1 when
//               both are uniform
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/comm/all_to_allv.h"

namespace dtl::moe {

struct Routing {
  int tokens = 0, experts = 0, top_k = 0;
  std::vector<int> expert;    // [tokens · k]: slot t·k + j is token t's j-th choice
  std::vector<float> weight;  // [tokens · k]: that choice's router probability
  std::vector<float> probs;   // [tokens · experts]: every router probability
};

// Throws UsageError unless 1 ≤ k ≤ experts and tokens ≥ 0.
Routing route_top_k(const float* logits, int tokens, int experts, int k);

// ⌈capacity_factor · k · tokens / experts⌉, at least 1; throws UsageError for a factor ≤ 0.
int expert_capacity(int tokens, int experts, int k, double capacity_factor);

// 1 for a kept slot, 0 for a dropped one (at most `capacity` per expert, GShard's order).
std::vector<std::uint8_t> kept_slots(const Routing& r, int capacity);

struct Dispatch {
  int ranks = 1;                               // EP ranks
  std::vector<std::size_t> tokens_to_rank;     // kept slots sent to each EP rank
  std::vector<std::size_t> tokens_per_expert;  // kept slots per expert
  std::vector<int> send_order;                 // the kept slots (t·k + j) in send order
  std::size_t dropped = 0;
};
// Throws UsageError unless ep ≥ 1 divides the experts.
Dispatch plan_dispatch(const Routing& r, const std::vector<std::uint8_t>& kept, int ep);
int rank_of_expert(int expert, int experts, int ep);

// all_to_allv's layout for rows of `hidden` elements: send this rank's dispatch, receive
// recv_tokens[q] rows from each rank q (what q's dispatch sends here), packed in rank order.
AllToAllvLayout dispatch_layout(const Dispatch& d, const std::vector<std::size_t>& recv_tokens, int hidden);

// Row i of `send` is the input row of send_order[i]'s token.
void gather_rows(const float* x, int hidden, const Dispatch& d, int top_k, float* send);
// out[token] += weight · back row i, for each sent slot i (out is not zeroed here).
void combine_rows(const float* back, int hidden, const Dispatch& d, const Routing& r, float* out);

double load_balancing_loss(const Routing& r);

}  // namespace dtl::moe
