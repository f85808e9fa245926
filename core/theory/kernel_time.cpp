// Compute time from shapes (kernel_time.h).
#include "core/theory/kernel_time.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace dtl::theory {

namespace {

constexpr double kActivationBytes = 2;  // 16-bit activations, as the planner counts them

// The GEMMs of a linear layer [rows × in]·[in × out]: forward, and backward's input and
// weight gradients ([rows × out]·[out × in] and [in × rows]·[rows × out]).
Gemm linear(double rows, double in, double out) { return {rows, out, in, 1}; }
Gemm input_gradient(double rows, double in, double out) { return {rows, in, out, 1}; }
Gemm weight_gradient(double rows, double in, double out) { return {in, out, rows, 1}; }

KernelTime linear_forward(const ClusterSpec& gpu, double rows, double in, double out) {
  return gemm_time(gpu, linear(rows, in, out));
}
KernelTime linear_backward(const ClusterSpec& gpu, double rows, double in, double out) {
  KernelTime k = gemm_time(gpu, input_gradient(rows, in, out));
  k += gemm_time(gpu, weight_gradient(rows, in, out));
  return k;
}

// Attention's two batched GEMMs per (sequence, head): scores Q·Kᵀ [s × d]·[d × s] and values
// P·V [s × s]·[s × d]; backward computes the gradient of each operand of each.
struct AttentionCore {
  KernelTime forward, backward;
};
AttentionCore attention_core(const ClusterSpec& gpu, double s, double d, double heads_times_batch) {
  const Gemm scores{s, s, d, heads_times_batch}, values{s, d, s, heads_times_batch};
  AttentionCore a;
  a.forward = gemm_time(gpu, scores);
  a.forward += gemm_time(gpu, values);
  a.backward = gemm_time(gpu, {s, d, s, heads_times_batch});   // dQ = dS·K
  a.backward += gemm_time(gpu, {s, d, s, heads_times_batch});  // dK = dSᵀ·Q
  a.backward += gemm_time(gpu, {s, s, d, heads_times_batch});  // dP = dO·Vᵀ
  a.backward += gemm_time(gpu, {s, d, s, heads_times_batch});  // dV = Pᵀ·dO
  return a;
}

}  // namespace

KernelTime gemm_time(const ClusterSpec& gpu, const Gemm& g, double element_bytes) {
  const double tiles = g.batch * std::ceil(g.m / gpu.tile_m) * std::ceil(g.n / gpu.tile_n);
  const double waves = std::ceil(tiles / gpu.sms);
  const double tile_flops = 2.0 * gpu.tile_m * gpu.tile_n * g.k;
  const double compute_s = waves * tile_flops / (gpu.gemm_flops / gpu.sms);  // the achieved rate, not the peak
  KernelTime k;
  k.flops = 2.0 * g.m * g.n * g.k * g.batch;
  k.bytes = g.batch * (g.m * g.k + g.k * g.n + g.m * g.n) * element_bytes;
  k.seconds = std::max(compute_s, k.bytes / gpu.memory_Bps) + gpu.kernel_gap_s;
  k.kernels = 1;
  return k;
}

KernelTime memory_time(const ClusterSpec& gpu, double bytes, int kernels) {
  return {bytes / gpu.memory_Bps + kernels * gpu.kernel_gap_s, 0, bytes, double(kernels)};
}

namespace {

// The attention core for b·heads/t (query heads on this GPU), n queries against `keys` keys.
// unfused: the batched GEMMs over the whole n × keys (attention_core above); flash: one kernel
// forward and one backward at the profile's flash rates, the causal half of the blocks computed
// (4·n·keys·d per head forward, FlashAttention's backward 2.5× that: it recomputes the scores).
AttentionCore core_attention(const ClusterSpec& gpu, double n, double keys, double d, double heads,
                             AttentionKernel kind) {
  if (kind == AttentionKernel::unfused) {
    AttentionCore a = attention_core(gpu, n, d, heads);  // one block: n queries, n keys; keys/n = cp of them
    for (KernelTime* k : {&a.forward, &a.backward}) k->seconds *= keys / n, k->flops *= keys / n, k->bytes *= keys / n;
    return a;
  }
  const double forward = 0.5 * 4 * n * keys * d * heads;  // causal: half the score blocks
  const bool two = kind == AttentionKernel::flash2;
  const double rate_f = two ? gpu.flash2_forward_flops : gpu.flash_forward_flops;
  const double rate_b = two ? gpu.flash2_backward_flops : gpu.flash_backward_flops;
  AttentionCore a;
  a.forward = {forward / rate_f + gpu.kernel_gap_s, forward, 4 * n * d * heads * kActivationBytes, 1};
  a.backward = {2.5 * forward / rate_b + gpu.kernel_gap_s, 2 * forward, 8 * n * d * heads * kActivationBytes, 1};
  return a;
}

// The element-wise and normalization kernels of one layer's forward (practice.h), 16-bit elements,
// 1-byte dropout masks. E: b·n·h outside the TP regions (÷ t with sequence parallelism), F: b·n·ffn/t,
// S: b·(a/t)·n·keys scores (unfused attention only).
//   norms          2 × (read + write E)
//   residual ×2    fused: bias-dropout-add, read x and the residual, write (3E, + a mask with dropout);
//                  unfused: GPT's bias add (2E), dropout (2E + mask), the add (3E), each a kernel
//   activation     GPT fused bias-GeLU 2F; unfused bias add 2F + GeLU 2F; Llama SwiGLU fused 3F,
//                  unfused SiLU 2F + the product 3F
//   rotary         Llama: Q and K read and written once (fused), three passes (unfused)
//   scores         unfused attention: the scaled-masked softmax 2S fused, or scale, mask and softmax
//                  2S each; dropout 2S + S mask bytes; the context's transpose copy 2·b·n·h/t
//   experts        (F counts a token's k experts) the router's fp32 softmax and top-k over b·n·E, and
//                  the permutation of the k copies of each token to its experts and back (2 · 2·k·b·n·h/t)
KernelTime elementwise_forward(const ClusterSpec& gpu, const ModelSpec& m, const ParallelConfig& cfg, double n,
                               double keys) {
  const Practice& p = cfg.practice;
  const double b = cfg.micro_batch_size, t = cfg.tp, h = m.hidden, B = kActivationBytes;
  const double k = m.experts > 0 ? m.top_k : 1;  // a token's k experts each run the MLP's element-wise work
  const double E = b * n * h / (p.sp() ? t : 1), F = k * b * n * m.ffn_size() / t, S = b * m.heads / t * n * keys;
  const bool fused = p.kernels == ElementwiseKernels::fused, gpt = m.family == Family::gpt, drop = p.has_dropout();
  double bytes = 2 * 2 * E * B;
  int kernels = 2;
  const double mask = drop ? E : 0;  // 1 byte per element
  if (fused)
    bytes += 2 * (3 * E * B + mask), kernels += 2;
  else
    bytes += 2 * ((gpt ? 2 * E * B : 0) + (drop ? 2 * E * B + mask : 0) + 3 * E * B), kernels += 2 * (1 + gpt + drop);
  if (gpt)
    bytes += (fused ? 2 : 4) * F * B, kernels += fused ? 1 : 2;
  else
    bytes += (fused ? 3 : 5) * F * B, kernels += fused ? 1 : 2;
  if (!gpt) {
    const double qk = b * n * (m.heads + m.kv()) * (h / m.heads) / t;
    bytes += (fused ? 2 : 6) * qk * B, kernels += fused ? 1 : 3;
  }
  if (m.experts > 0) {  // the router's softmax and top-k, the tokens permuted to their experts and back
    bytes += 2 * b * n * m.experts * 4 + 2 * 2 * k * b * n * h / t * B;
    kernels += 3;
  }
  if (!p.flash()) {
    bytes += (fused ? 2 : 6) * S * B + (drop ? 2 * S * B + S : 0) + 2 * b * n * h / t * B;
    kernels += (fused ? 1 : 3) + (drop ? 1 : 0) + 1;
  }
  return memory_time(gpu, bytes, kernels);
}

// The memory-bound work selective recomputation reruns: the softmax and its dropout (unfused attention).
KernelTime softmax_rerun(const ClusterSpec& gpu, const ModelSpec& m, const ParallelConfig& cfg, double n, double keys) {
  if (cfg.practice.flash()) return {};
  const double S = double(cfg.micro_batch_size) * m.heads / cfg.tp * n * keys;
  const bool drop = cfg.practice.has_dropout();
  return memory_time(gpu, 2 * S * kActivationBytes + (drop ? 2 * S * kActivationBytes + S : 0), drop ? 2 : 1);
}

}  // namespace

LayerTime transformer_layer_time(const ClusterSpec& gpu, const ModelSpec& m, const ParallelConfig& cfg) {
  const double b = cfg.micro_batch_size, s = m.seq, h = m.hidden, a = m.heads, t = cfg.tp, n = s / cfg.cp;
  const double rows = b * n, d = h / a, f = m.ffn_size();
  const double up = m.family == Family::llama ? 2 * f : f;  // SwiGLU's gate and up in one GEMM
  LayerTime l;
  // A mixture of experts: this GPU's E/ep experts each take b·n·k·ep/E rows (a balanced router: the
  // k copies of every token spread evenly), and the router [bn × h]·[h × E] picks them.
  const double experts = m.experts > 0 ? double(m.experts) / cfg.ep : 1;
  const double mlp_rows = m.experts > 0 ? rows * m.top_k / experts : rows;
  for (const auto& [in, out, r, count] : {std::tuple{h, m.qkv_width() / t, rows, 1.0},
                                          {h / t, h, rows, 1.0},
                                          {h, up / t, mlp_rows, experts},
                                          {f / t, h, mlp_rows, experts},
                                          {h, m.experts > 0 ? double(m.experts) : 0.0, rows, 1.0}}) {
    for (int e = 0; e < int(count) && out > 0; ++e) {
      l.forward_gemm += linear_forward(gpu, r, in, out);
      l.backward_gemm += linear_backward(gpu, r, in, out);
      l.weight_gradient_s += gemm_time(gpu, weight_gradient(r, in, out)).seconds;
    }
  }
  l.linear_forward_s = l.forward_gemm.seconds, l.linear_backward_s = l.backward_gemm.seconds;
  // The attention core: cp blocks of n queries against n keys (one per ring step), s keys in all.
  AttentionCore core = core_attention(gpu, n, s, d, b * a / t, cfg.practice.attention);
  l.block_forward_s = core.forward.seconds / cfg.cp, l.block_backward_s = core.backward.seconds / cfg.cp;
  l.forward_gemm += core.forward;
  l.backward_gemm += core.backward;
  l.forward_memory = elementwise_forward(gpu, m, cfg, n, s);
  // backward: twice the forward's traffic and kernels (each reads its output's gradient and its input)
  l.backward_memory = {2 * l.forward_memory.seconds, 0, 2 * l.forward_memory.bytes, 2 * l.forward_memory.kernels};
  l.core = core.forward;
  l.core += core.backward;
  if (cfg.recompute == Recompute::full) {  // backward reruns the whole forward first
    l.backward_gemm += l.forward_gemm;
    l.backward_memory += l.forward_memory;
  }
  if (cfg.recompute != Recompute::none) l.core += core.forward;  // the recomputed core
  if (cfg.recompute == Recompute::selective) {                   // only the attention core
    l.backward_gemm += core.forward;
    l.backward_memory += softmax_rerun(gpu, m, cfg, n, s);
  }
  if (cfg.recompute == Recompute::selective_op) {  // every other linear and every element-wise op, not attention
    l.core = core.forward;
    l.core += core.backward;
    for (const LinearShape& x : op_recomputed_linears(m, cfg.tp))
      l.backward_gemm += linear_forward(gpu, rows, x.in, x.out);
    l.backward_memory += l.forward_memory;
  }
  return l;
}

std::vector<LinearShape> op_recomputed_linears(const ModelSpec& m, int tp) {
  const double h = m.hidden, t = tp, f = m.ffn_size();
  if (m.family == Family::llama) return {{h, h * m.kv() / m.heads / t}, {h / t, h}, {h, f / t}};
  return {{h / t, h}, {f / t, h}};
}

LayerTime lm_head_time(const ClusterSpec& gpu, const ModelSpec& m, int micro_batch_size, int tp, int cp) {
  const double rows = double(micro_batch_size) * m.seq / cp, vocab_local = double(m.vocab) / tp;
  LayerTime l;
  if (m.vocab <= 0) return l;
  l.forward_gemm = linear_forward(gpu, rows, m.hidden, vocab_local);
  l.backward_gemm = linear_backward(gpu, rows, m.hidden, vocab_local);
  l.weight_gradient_s = gemm_time(gpu, weight_gradient(rows, m.hidden, vocab_local)).seconds;
  l.forward_memory = memory_time(gpu, 2 * rows * vocab_local * kActivationBytes, 1);
  l.backward_memory = memory_time(gpu, 2 * l.forward_memory.bytes, 2);
  return l;
}

double achieved_share(const ClusterSpec& gpu, const KernelTime& k) {
  return k.seconds > 0 ? k.flops / (k.seconds * gpu.peak_flops) : 0;
}

}  // namespace dtl::theory
