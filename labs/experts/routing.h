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
#include "exercises/experts.h"

namespace dtl::moe {

// The router, the capacity, the dispatch layout and the combine are the lab's exercises
// (exercises/experts.h): the lab calls the learner's code through these names.
using ex::combine_backward;
using ex::combine_rows;
using ex::Dispatch;
using ex::kept_slots;
using ex::plan_dispatch;
using ex::route_top_k;
using ex::Routing;

// ⌈capacity_factor · k · tokens / experts⌉, at least 1; throws UsageError for a factor ≤ 0.
int expert_capacity(int tokens, int experts, int k, double capacity_factor);
int rank_of_expert(int expert, int experts, int ep);

// all_to_allv's layout for rows of `hidden` elements: send this rank's dispatch, receive
// recv_tokens[q] rows from each rank q (what q's dispatch sends here), packed in rank order.
AllToAllvLayout dispatch_layout(const Dispatch& d, const std::vector<std::size_t>& recv_tokens, int hidden);
// The same exchange backwards (the combine's all-to-all): send and receive swapped.
AllToAllvLayout reversed(const AllToAllvLayout& l);

// Row i of `send` is the input row of send_order[i]'s token.
void gather_rows(const float* x, int hidden, const Dispatch& d, int top_k, float* send);
// Its backward: dx[token of send_order[i]] += d_send row i.
void gather_rows_backward(const float* d_send, int hidden, const Dispatch& d, int top_k, float* dx);

double load_balancing_loss(const Routing& r);
// dL/dprobs of `scale` · the load-balancing loss: scale · E · fₑ / T for every token (fₑ the
// share of the T·k choices routed to expert e), added to dprobs [tokens · experts].
void load_balancing_grad(const Routing& r, double scale, float* dprobs);
// Softmax backward, row by row: dlogits = p ⊙ (dp − Σ p·dp).
void softmax_backward(const Routing& r, const float* dprobs, float* dlogits);

// The exercises on crafted inputs against the lab's own brute force (routing_checks.cpp; the
// one-rank reference runs the same exercises, so it cannot catch a mistake they share):
// slots where route_top_k's choice or weight differs from a float64 softmax's k largest;
int router_errors_on_crafted_logits();
// entries of plan_dispatch's plan that differ from the layout above, by brute force;
int dispatch_errors_on_crafted_routing();
// the largest |combine_rows − a float64 weighted sum| (the residual kept), NaN as infinity.
double combine_error_on_crafted_rows();

}  // namespace dtl::moe
