// The experts lab's model: L residual mixture-of-experts blocks, x ← x + MoE(x), trained on a
// regression target. An MoE block routes each token to k of E experts (each the GPT's MLP,
// h → f → h with GELU) and sums their outputs weighted by the router's probabilities:
//
//   router     logits = x·Wrᵀ (+ the fixed --router-skew bias), top-k of the softmax, capacity
//   dispatch   an all-to-all of the per-expert counts, then all_to_allv of the token rows to
//              the ranks holding their experts (expert e on rank e / (E/EP))
//   experts    each expert's rows as one batch
//   combine    the reverse all_to_allv, then out = x + Σ weight · expert output
//   backward   the same exchanges in reverse order (Lepikhin et al. 2020, Fedus et al. 2021)
//
// Loss: mean squared error over the T·h outputs + aux_weight · the load-balancing loss
// E·Σ fᵢ·Pᵢ, averaged over the routing groups. A routing group is one rank's tokens under
// expert parallelism; the one-rank reference runs the same groups one after the other, so
// capacity drops exactly the same tokens (GShard's groups).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/wait_words.h"
#include "kernels/cpu/kernels.h"

namespace dtl::moe {

struct MoeShape {
  int layers = 2, hidden = 32, ffn = 64, experts = 8, top_k = 2;
  int tokens = 256;  // the global batch T, split evenly over the routing groups
  double capacity_factor = 1.25;
  bool drop = true;          // false: no capacity limit (each expert's batch is its whole load)
  double router_skew = 0;    // expert e's logit += skew · (E−1−e)/(E−1): low experts run hot
  float aux_weight = 0.01f;  // α of the load-balancing loss
  unsigned seed = 7;
};

// What one block's routing did on this rank in the last step, summed over its groups.
struct BlockRouting {
  int capacity = 0;                            // slots per expert and group (the last group's)
  std::vector<std::size_t> routed_per_expert;  // choices before capacity
  std::vector<std::size_t> kept_per_expert;    // after (from the router's choices and kept flags)
  std::size_t kept_slots = 0;                  // this rank's kept slots: the rows its dispatch must send
  std::vector<std::size_t> rows_to_rank;       // dispatch rows sent to each EP rank (own included)
  std::size_t rows_received = 0;               // rows this rank's experts computed (own included)
  std::vector<int> choice;                     // [tokens · k] this rank's choices, −1 where dropped
  std::vector<int> routed;                     // [tokens · k] the same before capacity (every expert)
  std::size_t dropped = 0, slots = 0;
  double aux_loss = 0;  // mean over this rank's groups
};

// Seconds of the last step on this rank.
struct StepSeconds {
  double all_to_all = 0;   // counts and rows, dispatch and combine, forward and backward
  double experts = 0;      // the experts' forward and backward GEMMs
  double experts_cpu = 0;  // the same as the thread's CPU time: the work, without waiting for a
                           // core (thread ranks outnumbering the cores share them)
  double router = 0;       // router forward/backward, permutes and combine
};

struct Param {
  std::string name;
  int index = 0;  // position in the model's canonical list, the same on every EP size
  std::vector<float> w, g, m, v;
};

class MoeModel {
 public:
  // `ep`: the expert-parallel group (this rank holds experts E/EP·r .. E/EP·(r+1)−1 and the
  // tokens of its groups); groups_per_rank: routing groups run by this rank (the reference: EP).
  MoeModel(const MoeShape& shape, Comm& ep, int groups_per_rank);
  ~MoeModel();
  MoeModel(const MoeModel&) = delete;
  MoeModel& operator=(const MoeModel&) = delete;

  // Forward, loss, backward over this rank's tokens; the router's gradients summed over the
  // EP group. Returns the whole batch's loss (the same on every rank).
  float train_step();
  void adamw_step(const kernels::AdamWConfig& c, int t);

  // The blocks one at a time, on rows the caller owns (the tiny GPT's ln_2 outputs): this
  // rank's tokens/EP rows [× h], in routing groups of rows/groups_per_rank, contiguous.
  // begin_step zeroes the gradients; forward_block adds MoE(x) to out (the caller adds
  // the residual); backward_block adds dL/dx through the MoE to dx; end_step sums the
  // router's gradients over the EP group and returns the load-balancing loss summed over
  // the blocks, each the mean over all routing groups (the same on every rank).
  void begin_step();
  void forward_block(int layer, const float* x, float* out);
  void backward_block(int layer, const float* dout, float* dx);
  double end_step();

  std::vector<Param>& params();  // this rank's: every router, its own experts
  const std::vector<BlockRouting>& routing() const;
  const StepSeconds& seconds() const;
  float last_aux_loss() const;                // α-free load-balancing loss, mean over blocks and groups
  const std::vector<float>& inputs() const;   // this rank's tokens [T/EP × h] (the first block's x)
  const std::vector<float>& targets() const;  // and their regression targets
  static int param_count(const MoeShape& s);  // the canonical list's length

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What an expert-parallel rank waits for, in the lab's words, for the watchdog
// (core/comm/wait_words.h): "for the dispatch of block 1, the tokens' rows to their experts".
// Each exchange of a block carries its part, pass and block (ScopedCollectiveRole).
CollectiveWords moe_wait_words();

}  // namespace dtl::moe
