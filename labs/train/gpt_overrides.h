// What a lab may put in place of parts of the GPT's blocks (labs/train/gpt.h): the experts
// lab's mixture of experts for the MLP, the context-parallel lab's attention across ranks.
#pragma once

namespace dtl {

// A replacement for every block's MLP (the experts lab puts its mixture of experts there):
// forward adds MLP(x) to y, backward adds dL/dx to dx, for block `block`; x and dx are ln_2's
// output and its gradient, [local_rows × h], fp32 on the host.
class GptMlpOverride {
 public:
  virtual ~GptMlpOverride() = default;
  virtual void forward(int block, const float* x, float* y) = 0;
  virtual void backward(int block, const float* dy, float* dx) = 0;
};

// A replacement for every block's core attention (the context-parallel lab's ring, all-gather
// or Ulysses attention, labs/context_parallel/): from the c_attn output rows qkv [local_rows ×
// 3h] (every head's Q, then K, then V) it writes the attention output out [local_rows × h];
// backward writes dL/d(qkv) [local_rows × 3h] from dL/d(out). fp32 on the host. The block
// keeps its qkv and out as without it (the override may read them in its backward: both stay
// in place from the block's forward to its backward) but not the B·A·S² probabilities, which
// never exist: the override keeps what its backward needs instead (its log-sum-exp per row and
// head, and whatever its algorithm gathered) and counts it itself (gpt_activation_parts).
class GptAttentionOverride {
 public:
  virtual ~GptAttentionOverride() = default;
  virtual void forward(int block, const float* qkv, float* out) = 0;
  virtual void backward(int block, const float* dout, float* dqkv) = 0;
};

}  // namespace dtl
