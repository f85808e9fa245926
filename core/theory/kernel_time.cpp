// Compute time from shapes (kernel_time.h).
#include "core/theory/kernel_time.h"

#include <algorithm>
#include <cmath>

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
  return k;
}

KernelTime memory_time(const ClusterSpec& gpu, double bytes, int kernels) {
  return {bytes / gpu.memory_Bps + kernels * gpu.kernel_gap_s, 0, bytes};
}

LayerTime transformer_layer_time(const ClusterSpec& gpu, const ModelSpec& m, int micro_batch_size, int tp,
                                 Recompute recompute, int cp) {
  const double b = micro_batch_size, s = m.seq, h = m.hidden, a = m.heads, t = tp, n = s / cp;
  const double rows = b * n, d = h / a;
  LayerTime l;
  for (const auto& [in, out] : {std::pair{h, 3 * h / t}, {h / t, h}, {h, 4 * h / t}, {4 * h / t, h}}) {
    l.forward_gemm += linear_forward(gpu, rows, in, out);
    l.backward_gemm += linear_backward(gpu, rows, in, out);
  }
  AttentionCore core = attention_core(gpu, n, d, b * a / t);  // one block: n queries, n keys
  l.block_forward_s = core.forward.seconds, l.block_backward_s = core.backward.seconds;
  for (KernelTime* k : {&core.forward, &core.backward})  // cp blocks, one per ring step
    k->seconds *= cp, k->flops *= cp, k->bytes *= cp;
  l.forward_gemm += core.forward;
  l.backward_gemm += core.backward;
  const double softmax_elems = 2 * b * a * n * s / t;
  // 6 kernels forward (2 LayerNorms, 2 residual adds, GELU, softmax), twice that backward
  l.forward_memory = memory_time(gpu, (18 * b * n * h / t + softmax_elems) * kActivationBytes, 6);
  l.backward_memory = memory_time(gpu, 2 * l.forward_memory.bytes, 12);
  if (recompute == Recompute::full) {  // backward reruns the whole forward first
    l.backward_gemm += l.forward_gemm;
    l.backward_memory += l.forward_memory;
  } else if (recompute == Recompute::selective) {  // only the attention core
    l.backward_gemm += core.forward;
    l.backward_memory += memory_time(gpu, softmax_elems * kActivationBytes, 1);
  }
  return l;
}

LayerTime lm_head_time(const ClusterSpec& gpu, const ModelSpec& m, int micro_batch_size, int tp, int cp) {
  const double rows = double(micro_batch_size) * m.seq / cp, vocab_local = double(m.vocab) / tp;
  LayerTime l;
  if (m.vocab <= 0) return l;
  l.forward_gemm = linear_forward(gpu, rows, m.hidden, vocab_local);
  l.backward_gemm = linear_backward(gpu, rows, m.hidden, vocab_local);
  l.forward_memory = memory_time(gpu, 2 * rows * vocab_local * kActivationBytes, 1);
  l.backward_memory = memory_time(gpu, 2 * l.forward_memory.bytes, 2);
  return l;
}

double achieved_share(const ClusterSpec& gpu, const KernelTime& k) {
  return k.seconds > 0 ? k.flops / (k.seconds * gpu.peak_flops) : 0;
}

}  // namespace dtl::theory
