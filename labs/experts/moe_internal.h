// The experts model's insides, shared by moe_model.cpp (routing, the experts' math) and
// moe_exchange.cpp (the all-to-alls of one routing group's pass through a block).
#pragma once

#include <vector>

#include "core/comm/all_to_allv.h"
#include "labs/experts/moe_model.h"
#include "labs/experts/routing.h"

namespace dtl::moe {

// What one routing group's pass through one block keeps for backward.
struct GroupCache {
  std::vector<float> x;  // the block's input rows [tokens × h]
  Routing routing;
  std::vector<std::uint8_t> kept;
  Dispatch dispatch;
  AllToAllvLayout rows;                 // the dispatch all_to_allv (elements); the combine is its reverse
  std::vector<std::size_t> batch_rows;  // rows of each local expert's batch
  std::vector<std::size_t> perm;        // batch row → received row (batches: expert, then source rank)
  std::vector<float> in, pre, act;      // the experts' inputs [R × h], pre-GELU and GELU [R × f]
  std::vector<float> back;              // the combine's returned rows [S × h], send order
};

struct MoeModel::Impl {
  Impl(const MoeShape& shape, Comm& group, int groups_per_rank);

  MoeShape s;
  Comm& ep;
  int groups, P, me, local_experts;
  std::vector<Param> params;  // per block: the router, then each local expert's w1, b1, w2, b2
  std::vector<float> x0, target;
  std::vector<std::vector<GroupCache>> cache;  // [block][group]
  std::vector<BlockRouting> routing;
  StepSeconds secs;
  float aux = 0;

  Param& router(int layer) { return params[std::size_t(layer * (1 + 4 * local_experts))]; }
  Param& expert(int layer, int j, int tensor) {
    return params[std::size_t(layer * (1 + 4 * local_experts) + 1 + 4 * j + tensor)];
  }

  std::size_t rows() const { return std::size_t(s.tokens / P); }  // this rank's tokens
  float train_step();
  void begin_step();
  void forward_block(int layer, const float* x, float* out);
  void backward_block(int layer, const float* dout, float* dx);
  double aux_term() const;  // Σ over blocks of this rank's groups' mean load-balancing loss / EP
  void route(int layer, GroupCache& c, int tokens);
  void expert_forward(int layer, int j, GroupCache& c, std::size_t o, std::size_t n, float* y);
  void expert_backward(int layer, int j, GroupCache& c, std::size_t o, std::size_t n, const float* dy, float* dx);
  void router_backward(int layer, GroupCache& c, const std::vector<float>& d_weight, float* dx);
  void record_routing(int layer, const GroupCache& c, BlockRouting& b);
  void check_exercise_outputs(const GroupCache& c, int tokens) const;
  // moe_exchange.cpp
  void forward_group(int layer, GroupCache& c, int tokens, float* out);
  void backward_group(int layer, GroupCache& c, const float* dout, float* dx);
  void exchange_counts(int layer, GroupCache& c);
  void reduce_router_grads();
};

}  // namespace dtl::moe
