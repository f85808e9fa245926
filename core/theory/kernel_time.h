// Compute time from the shapes of the work (`dtlab simulate` and `dtlab plan`, issues 30, 45):
// every GEMM of a transformer layer timed on the GPU's *achieved* cuBLAS rate (the profile's
// gemm_flops, measured at its best shape: gpu_profile.h), quantized onto its SMs, the
// element-wise and normalization kernels on its achieved memory bandwidth, and every kernel
// followed by the profile's gap between kernels. No fitted efficiency: what the model still
// leaves out (host stalls, fusion) shows as its error against published runs (docs/planning.md).
//
// A GEMM C[m×n] = A[m×k]·B[k×n] (`batch` of them) on a GPU of S SMs, output tiles tm×tn:
//   tiles  = batch · ⌈m/tm⌉ · ⌈n/tn⌉                     one thread block per tile
//   waves  = ⌈tiles / S⌉                                 each SM computes one tile at a time
//   compute time = waves · 2·tm·tn·k / (achieved / S)    padded tiles and a last partial wave
//                                                        cost a full tile and a full wave
//   memory time  = batch · (m·k + k·n + m·n) · bytes / bandwidth
//   time = max(compute, memory) + the gap between kernels (the roofline, then the launch)
// The GEMM's efficiency = useful FLOPs 2·m·n·k·batch / (time · peak): tile quantization
// (m, n not multiples of the tile) and wave quantization (tiles not a multiple of S) lower
// it for small or oddly sized matrices and leave it near 1 for large ones, which is why
// real systems gain throughput per GPU from larger models. Every GEMM gets the one tile
// shape (cuBLAS would pick smaller tiles for a thin one such as a matrix-vector product,
// which this overprices; a transformer's GEMMs are all wide).
#pragma once

#include <string>
#include <vector>

#include "core/theory/plan.h"

namespace dtl::theory {

struct Gemm {
  double m = 0, n = 0, k = 0;
  double batch = 1;
};

struct KernelTime {
  double seconds = 0;
  double flops = 0;    // useful FLOPs (0 for a memory-bound kernel)
  double bytes = 0;    // bytes moved to and from memory
  double kernels = 0;  // launches (each followed by the profile's gap)
  KernelTime& operator+=(const KernelTime& o) {
    seconds += o.seconds, flops += o.flops, bytes += o.bytes, kernels += o.kernels;
    return *this;
  }
};

// One GEMM (16-bit operands: element_bytes 2) and one memory-bound kernel on `gpu`.
KernelTime gemm_time(const ClusterSpec& gpu, const Gemm& g, double element_bytes = 2);
// `kernels` memory-bound kernels moving `bytes` in all: bytes / bandwidth + kernels · gap.
KernelTime memory_time(const ClusterSpec& gpu, double bytes, int kernels = 1);

// One transformer layer for one micro-batch of b sequences on one GPU of a TP group of t, 16-bit
// activations, as the run's practice says (practice.h). GPT: LayerNorm → attention → LayerNorm →
// MLP h → ffn → h, GELU; Llama: RMSNorm, rotary Q/K, grouped-query attention (kv heads), SwiGLU.
//   forward GEMMs   QKV [bs × h]·[h × (h + 2·kv·d)/t], projection [bs × h/t]·[h/t × h], MLP up
//                   [bs × h]·[h × ffn/t] (SwiGLU: 2·ffn/t, gate and up) and down [bs × ffn/t]·[ffn/t × h]
//   attention core  unfused: scores (b·a/t)·[s × d]·[d × s] and values (b·a/t)·[s × s]·[s × d] as
//                   batched GEMMs over the whole s × s; flash: one kernel, the causal half, at the
//                   profile's flash rates (backward 2.5× the forward's FLOPs)      (d = h/a)
//   backward GEMMs  two per forward GEMM: the input's gradient and the weight's (scores and
//                   values: the gradients of both operands)
//   memory-bound    elementwise_forward (kernel_time.cpp): norms, residual adds, dropout, activation,
//                   rotary, and with unfused attention the scores' softmax — ÷ t inside the TP
//                   regions, outside them only with sequence parallelism; backward twice the forward
//   recomputation   full: backward adds the whole forward; selective: the attention core (and the
//                   unfused softmax)
//   context par. cp each GPU holds n = s/cp positions (context_parallel.h): every bs above is
//                   b·n, and the attention core is cp blocks of n queries against n keys
struct LayerTime {
  KernelTime forward_gemm, forward_memory, backward_gemm, backward_memory;
  double block_forward_s = 0, block_backward_s = 0;    // one ring step's attention block (cp > 1)
  double linear_forward_s = 0, linear_backward_s = 0;  // of the GEMMs: the four linear layers' (no recomputation)
  // Of linear_backward_s, the weight-gradient GEMMs (Xᵀ·dY): what a zero-bubble schedule defers as
  // W (Qi et al. 2023); the rest of the backward (input gradients, attention, element-wise) is its B.
  double weight_gradient_s = 0;
  KernelTime core;  // the attention core's forward, backward and recomputed forward (part of the GEMMs above)
  double forward_s() const { return forward_gemm.seconds + forward_memory.seconds; }
  double backward_s() const { return backward_gemm.seconds + backward_memory.seconds; }
};
LayerTime transformer_layer_time(const ClusterSpec& gpu, const ModelSpec& m, const ParallelConfig& cfg);

// The linear layers selective-op recomputation (recompute.h) reruns in backward, as {in, out}
// features on one of t TP ranks: the 2nd, 4th, ... matmul of the layer in torchtitan's forward
// order. Llama (Q, K, V, O, gate, up, down): K (h → h·kv/a), O (h/t → h), up (h → ffn); GPT (one
// QKV, projection, fc1, fc2): the projection (h/t → h) and fc2 (ffn/t → h).
struct LinearShape {
  double in = 0, out = 0;
};
std::vector<LinearShape> op_recomputed_linears(const ModelSpec& m, int tp);

// The LM head on the last stage: logits [bs × h]·[h × V/t], its two backward GEMMs, and the
// softmax cross-entropy over the logits (read + write b·s·V/t forward, twice backward).
// With cp, the b·s/cp rows of this GPU.
LayerTime lm_head_time(const ClusterSpec& gpu, const ModelSpec& m, int micro_batch_size, int tp, int cp = 1);

// Useful FLOPs over (time · peak): how much of the peak the shapes let the GPU reach.
double achieved_share(const ClusterSpec& gpu, const KernelTime& k);

}  // namespace dtl::theory
