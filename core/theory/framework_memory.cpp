// Activations by practice and the framework's memory lines (framework_memory.h).
#include "core/theory/framework_memory.h"

#include <algorithm>

namespace dtl::theory {

double layer_activation_bytes(const ModelSpec& m, const ParallelConfig& p, Recompute r) {
  const Practice& x = p.practice;
  const double s = double(m.seq) / p.cp, b = p.micro_batch_size, h = m.hidden, a = m.heads, t = p.tp;
  const double sbh = s * b * h, outside = x.sp() ? t : 1;
  if (r == Recompute::full) return 2 * sbh / outside;  // each layer's input
  if (r == Recompute::selective_op) {  // the input, the odd matmuls' outputs, attention's output and log-sum-exp
    const bool llama = m.family == Family::llama;
    const double odd = llama ? 2 * sbh + 2 * sbh * m.kv() / a + 2 * s * b * m.ffn_size()  // Q, V, gate
                             : 2 * s * b * m.qkv_width() + 2 * s * b * m.ffn_size();      // QKV, fc1
    const double down = llama ? 2 * sbh : 0;                                              // down's output
    return (2 * sbh + down) / outside + (odd + 2 * sbh + 4 * a * s * b) / t;
  }
  const double masks = x.has_dropout() ? 2 * sbh : 0;
  const double unsplit = (4 + 2 + 2) * sbh + masks;
  const double experts = m.experts > 0 ? m.top_k : 1;  // a token's k experts keep their own MLP tensors
  const double kv = 2 * 2 * sbh * m.kv() / a;
  const double inner = experts * (m.family == Family::llama ? 4 : 2) * 2 * s * b * m.ffn_size();
  const double split = 2 * sbh + kv + 2 * sbh + inner;
  double scores = 0;  // the s × s terms: the keys are all s positions of the sequence
  const double keys = m.seq;
  if (x.flash())
    scores = 4 * a * s * b;
  else if (r == Recompute::none)
    scores = (2 + (x.has_dropout() ? 3 : 0)) * a * s * keys * b;
  return unsplit / outside + (split + scores) / t;
}

namespace {

double stage_parameters(const Plan& p) { return p.psi / (double(p.config.tp) * p.config.pp); }

}  // namespace

std::vector<MemoryLine> framework_memory(const Plan& pl) {
  const auto& m = pl.model;
  const auto& p = pl.config;
  std::vector<MemoryLine> out;
  const int d = p.dp * p.cp;
  const double held = stage_parameters(pl) / (p.zero >= 2 ? d : 1);  // gradients this GPU keeps
  if (p.practice.grads == GradPrecision::fp32)
    out.push_back({"memory.fp32_grads", "fp32 gradients (+2 B/param)", 2 * held,
                   "Megatron-LM arguments.py: --bf16 accumulates and reduces the gradients in fp32"});
  if (!m.has_shape()) return out;
  const double V = m.vocab, h = m.hidden, t = p.tp;
  if (p.pp > 1 && V > 0) {
    const double extra = V * h / t - V * h / (t * p.pp);  // its embedding beyond the even split
    const double state = extra * (pl.memory.model_state() / std::max(1.0, stage_parameters(pl)));
    out.push_back({"memory.embedding", "embedding on the first stage", state,
                   "V·h/tp parameters beyond Ψ/(tp·pp), at its bytes per parameter"});
  }
  if (V > 0) {
    const double logits = double(p.micro_batch_size) * m.seq / p.cp * V / t;
    out.push_back({"memory.logits", "logits, last stage", 6 * logits,
                   "b·s·V/tp · (2 + 4) B: Megatron's cross-entropy runs on an fp32 copy", p.pp == 1});
  }
  if (p.recompute != Recompute::none &&
      layer_activation_bytes(m, p, Recompute::none) >
          layer_activation_bytes(m, p,
                                 p.recompute)) {  // the layer whose backward runs holds what recomputation rebuilt
    const double rebuilt = layer_activation_bytes(m, p, Recompute::none) - layer_activation_bytes(m, p, p.recompute);
    out.push_back({"memory.recompute_working", "one layer's recomputed activations, in its backward", rebuilt,
                   "Chen et al. 2016: a recomputed layer's tensors live until its backward ends"});
  }
  if (p.zero == 3) {  // ZeRO-3/FSDP: whole layers live from their all-gather to their reshard
    const double layer = m.layer_parameters() / t;
    out.push_back({"memory.zero3_gathered", "ZeRO-3 gathered layers (16-bit)",
                   (1 + p.practice.zero3_prefetch) * layer * 2,
                   "the running layer and the --zero3-prefetch layers gathered ahead, unsharded (PyTorch "
                   "FSDP: from all-gather to reshard)"});
    out.push_back({"memory.zero3_unsharded_grads", "one layer's gradients before reduce-scatter",
                   layer * (p.practice.grads == GradPrecision::fp32 ? 4 : 2),
                   "unsharded until the layer's reduce-scatter, in the reduce precision (--grads)"});
  }
  int communicators = 0;
  for (int size : {p.tp, p.dp * p.cp, p.pp, p.ep}) communicators += size > 1 ? 1 : 0;
  out.push_back({"memory.nccl", "NCCL buffers", communicators * 16 * 2 * 4.0 * 1024 * 1024,
                 "per communicator 16 channels × 2 protocols × 4 MiB (NCCL_BUFFSIZE, NCCL docs)"});
  out.push_back({"memory.context", "CUDA context and workspaces", 0.5e9,
                 "assumed (not measured by dtlab): context, cuBLAS workspace, modules"});
  return out;
}

}  // namespace dtl::theory
