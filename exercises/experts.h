// Exercises of the experts lab: the three pieces of a mixture-of-experts layer that expert
// parallelism moves tokens with (Shazeer et al. 2017; GShard, Lepikhin et al. 2020; Switch,
// Fedus et al. 2021). The lab (labs/experts/experts_lab.cpp) calls them on every rank, so a
// run and dtlab-viz show the learner's own routing; `dtlab grade --exercise ID` grades them.
//
//   top_k_router      route_top_k + kept_slots: softmax, the k largest, the capacity
//   dispatch_layout   plan_dispatch: counts per rank and expert, the send permutation
//   combine           combine_rows + combine_backward: un-permute, weight, and the reverse
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtl::ex {

// One group's routing (a rank's tokens): every token's k choices and their weights.
struct Routing {
  int tokens = 0, experts = 0, top_k = 0;
  std::vector<int> expert;    // [tokens · k]: slot t·k + j is token t's j-th choice
  std::vector<float> weight;  // [tokens · k]: that choice's router probability
  std::vector<float> probs;   // [tokens · experts]: every router probability
};

// The router: each token's softmax over its `experts` logits (rows of `logits`, computed
// from the row's largest logit so nothing overflows); its k largest probabilities are its
// choices in descending order, a tie going to the lower expert; each choice's weight is its
// probability. Throws UsageError unless 1 ≤ k ≤ experts and tokens ≥ 0.
Routing route_top_k(const float* logits, int tokens, int experts, int k);

// Capacity: at most `capacity` slots per expert are kept (1), the rest dropped (0), in
// GShard's order: every token's first choice in token order, then every second choice, ...
std::vector<std::uint8_t> kept_slots(const Routing& r, int capacity);

// Where the kept slots go over `ranks` expert-parallel ranks: expert e lives on rank
// e / (experts / ranks).
struct Dispatch {
  int ranks = 1;
  std::vector<std::size_t> tokens_to_rank;     // kept slots sent to each rank (the send counts)
  std::vector<std::size_t> first_row_of_rank;  // where each rank's block starts in the send buffer
  std::vector<std::size_t> tokens_per_expert;  // kept slots per expert
  std::vector<int> send_order;                 // the kept slots (t·k + j): row i of the send buffer
  std::size_t dropped = 0;                     // slots not kept
};

// The dispatch layout: send_order sorted by destination rank, then expert, then token, so
// each rank's rows are one block and, inside it, each expert's rows are contiguous.
// Throws UsageError unless ranks ≥ 1 divides the experts.
Dispatch plan_dispatch(const Routing& r, const std::vector<std::uint8_t>& kept, int ranks);

// The combine: row i of `back` (the expert's output for send_order[i]) is added to its
// token's row of `out`, times that slot's router weight. `out` is not zeroed here.
void combine_rows(const float* back, int hidden, const Dispatch& d, const Routing& r, float* out);

// Its backward, given dL/dout: d_back row i = weight · dout[token]; d_weight[slot] =
// <back row i, dout[token]> for each sent slot (d_weight has tokens·k entries; slots not
// sent are left as they are).
void combine_backward(const float* back, const float* dout, int hidden, const Dispatch& d, const Routing& r,
                      float* d_back, float* d_weight);

}  // namespace dtl::ex
