// ZeRO's model-state memory and communication as pure functions (seeds 001, 002, 003, 004;
// Rajbhandari et al. 2020, Table 1). Ψ parameters, N data-parallel ranks.
//
// The curriculum counts bytes per parameter three ways; each is a Convention here:
//   sixteen  2 + 2 + 12: 16-bit params and grads, fp32 master, m, v (seed 003's 100M table,
//            seed 004 with K = 12):  DDP 16Ψ · ZeRO-1 4Ψ + 12Ψ/N · ZeRO-2 2Ψ + 14Ψ/N · ZeRO-3 16Ψ/N
//   twelve   2 + 2 + 8: no separate master (seed 002's worked example):
//                                    12Ψ · 4Ψ + 8Ψ/N · 2Ψ + 10Ψ/N · 12Ψ/N
//   eight    2 + 2 + 4: seed 001's 175B example (its "naive DDP 1,050 GB" leaves the gradients out)
//                                    8Ψ · 4Ψ + 4Ψ/N · 2Ψ + 6Ψ/N · 8Ψ/N
// Communication per rank per step, in elements of the gradient/parameter type:
//   DDP, ZeRO-1, ZeRO-2   2Ψ(N-1)/N   (reduce-scatter + all-gather, or one all-reduce)
//   ZeRO-3                3Ψ(N-1)/N   (all-gather in forward, again in backward, reduce-scatter)
#pragma once

namespace dtl::theory {

enum class ZeroConvention { sixteen, twelve, eight };

// Bytes per parameter, split by what holds them; stage 0 is plain DDP.
struct ZeroBytes {
  double params = 0, grads = 0, optimizer = 0;  // per parameter of the model
  double total() const { return params + grads + optimizer; }
};

// What one parameter costs in a run, before sharding: its parameter, its gradient and its
// optimizer state K (AdamW's m and v, and the fp32 master of 16-bit parameters). The
// conventions are {2, 2, 12}, {2, 2, 8}, {2, 2, 4}; an fp32 run is {4, 4, 8}.
struct ZeroPrecision {
  double param = 2, grad = 2, optimizer = 12;
};
ZeroPrecision zero_precision(ZeroConvention c);
// Bytes one AdamW step moves per parameter, memory-bound: it reads the gradient and the
// optimizer state and writes the state and the parameter back, grad + 2·K + param (28 B
// under 2+2+12).
inline double optimizer_step_bytes(const ZeroPrecision& p) { return p.grad + 2 * p.optimizer + p.param; }
const char* zero_convention_name(ZeroConvention c);  // "16 B (2+2+12)", ...

// Throws UsageError for a stage outside 0..3 or N < 1.
ZeroBytes zero_bytes_per_param(int stage, int N, ZeroPrecision p);
ZeroBytes zero_bytes_per_param(int stage, int N, ZeroConvention c);
// Model-state bytes per rank: Ψ · zero_bytes_per_param(...).total().
double zero_model_state_bytes(double psi, int stage, int N, ZeroConvention c);
// Elements each rank sends per training step (ring collectives).
double zero_comm_elements_per_rank(double psi, int stage, int N);

}  // namespace dtl::theory
