// The GPT as a pipeline stage (gpt.h, "Pipeline stages"): the span it holds, one set of
// activations per micro-batch in flight, and the forward and backward of one micro-batch
// through the held part. The kernels, the tensor-parallel regions and the table are the
// whole model's (gpt.cpp, gpt_params.cpp); only where a micro-batch enters and leaves differs.
#include <string>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/train/gpt.h"

namespace dtl {

void Gpt::check_span() {
  if (span_.last < 0) span_.last = c_.layers - 1;
  const auto n = [](int v) { return std::to_string(v); };
  if (span_.first < 0 || span_.first > span_.last || span_.last >= c_.layers)
    throw UsageError("a GPT stage holds blocks " + n(span_.first) + ".." + n(span_.last) + " of a model with " +
                     n(c_.layers) + ": give a non-empty range inside 0.." + n(c_.layers - 1));
  if (whole()) return;
  if (precision_ != DType::f32)
    throw UsageError("a GPT pipeline stage runs in fp32 (mixed precision's windows assume the whole model)");
  if (sp_)
    throw UsageError(
        "a GPT pipeline stage runs without sequence parallelism (its head's backward would need the "
        "gathered ln_f output of a micro-batch long gone)");
}

void Gpt::require_stage_use(const char* what) const {
  if (mixed() || sp_)
    throw Error(std::string("Gpt::") + what + " runs in fp32 without sequence parallelism; use forward_backward");
}

void Gpt::set_mlp_override(GptMlpOverride* mlp) {
  // The override reads and writes host fp32 rows of the whole model's residual stream.
  if (mlp && (precision_ != DType::f32 || ops_.device().kind != Device::Kind::cpu || T_ != 1 || !whole()))
    throw UsageError(
        "a replaced MLP (the experts lab's mixture of experts) needs the whole GPT in fp32 on the host, "
        "without tensor parallelism");
  mlp_override_ = mlp;
}

void Gpt::set_context_parallel(GptAttentionOverride* attention, std::vector<int> positions) {
  if (precision_ != DType::f32 || ops_.device().kind != Device::Kind::cpu || T_ != 1 || !whole() ||
      recompute_ != theory::Recompute::none)
    throw UsageError(
        "context parallelism (a replaced attention) needs the whole GPT in fp32 on the host, without "
        "tensor parallelism or recomputation");
  if (!own_.blocks.empty()) throw Error("Gpt::set_context_parallel: call it before the first forward");
  if (positions.empty()) throw UsageError("context parallelism: a rank holds at least one position");
  for (std::size_t i = 0; i < positions.size(); ++i)
    if (positions[i] < 0 || positions[i] >= c_.seq || (i > 0 && positions[i] <= positions[i - 1]))
      throw UsageError("context parallelism: a rank's positions ascend inside 0.." + std::to_string(c_.seq - 1));
  attention_override_ = attention;
  positions_ = std::move(positions);
  rows_ = rows_local_ = int(positions_.size()) * c_.batch;
  allocate_workspace();  // the buffers for this rank's rows
}

void Gpt::zero_grads() {
  require_stage_use("zero_grads");
  ops_.zero(grads(), num_params());
}

const float* Gpt::forward_stage(const int* tokens, const float* x, const int* targets, GptActivations& a, float* loss,
                                float loss_scale) {
  require_stage_use("forward_stage");
  if (a.blocks.size() != std::size_t(held_blocks()))
    throw Error("Gpt::forward_stage: give it the activations make_activations() made for this stage");
  acquire_block(a, 0);
  if (span_.embedding)
    embed_forward(tokens, a);
  else
    copy_bytes(a.blocks[0].input, x, std::size_t(rows_local_) * std::size_t(c_.hidden) * sizeof(float));
  forward_blocks(a);
  if (!span_.head) return a.output;
  *loss = head_forward(targets, a);
  // The gradient of loss_scale × this micro-batch's mean: its share of the step's loss.
  if (loss_scale != 1.0f) ops_.scale(loss_scale, a.dlogits, std::size_t(rows_) * std::size_t(vocab_local()));
  return nullptr;
}

const float* Gpt::backward_stage(const int* tokens, const float* dy, GptActivations& a) {
  require_stage_use("backward_stage");
  if (span_.head) {
    head_backward(a);  // leaves dL/d(ln_f's input) in dresid_, gives the end back
  } else {
    copy_bytes(dresid_.data(), dy, std::size_t(rows_local_) * std::size_t(c_.hidden) * sizeof(float));
    a.end.reset();  // the output went to the next stage long ago
  }
  backward_blocks(a);
  if (!span_.embedding) return dresid_.as<float>();
  embed_backward(tokens);
  return nullptr;
}

}  // namespace dtl
