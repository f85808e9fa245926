// Context parallelism in the planner and the simulator (plan.h, labs/simulate): the sequence
// split over cp GPUs as Megatron-LM's --context-parallel-size, torchtitan and Llama 3 do, and
// the exchange attention then needs, counted as labs/context_parallel/cp_exchange.h measures it.
//
// Each GPU holds n = s/cp positions of every sequence of its micro-batch (zig-zag: 2·cp
// chunks, rank i holding chunks i and 2·cp−1−i, so s must divide by 2·cp and every rank gets
// the same causal work). Per layer and micro-batch, on one GPU of a TP group of t, 16-bit:
//   chunk        its K and V: 2·(b·n)·h_kv·2 bytes, h_kv = h/t (multi-head attention: every
//                head has its own K/V; TP splits the heads)
//   block        the attention of n queries against n keys: forward 4·b·n²·h/t FLOPs (Q·Kᵀ and
//                P·V, 2·n²·d each per head), backward twice it — every block counted whole, as
//                the planner's 12·L·h·s counts attention (the causal mask's halving left out)
// ring (Liu et al. 2023, "Ring Attention with Blockwise Transformers"; Megatron's p2p):
//   forward      cp−1 hops of a chunk around the ring (the local chunk reaches every rank)
//   backward     cp−1 hops of K/V again, and the dK/dV chunk travelling with it: cp hops (the
//                last one brings it home) — about twice the forward
//   exposed      the ring posts the next hop before computing the current block, so a hop
//                costs only what it lasts beyond that block: per forward hop
//                max(0, α + chunk/β − block_f); per backward step, K/V and dK/dV together,
//                max(0, α + 2·chunk/β − block_b) for cp−1 steps, and the last dK/dV hop home
//                (α + chunk/β, no block left to hide it)
// all-gather (Llama 3, Dubey et al. 2024 §3.3.2): an all-gather of every rank's chunk before
//   attention, (cp−1)·chunk leaving (the whole K/V's (cp−1)/cp), and a reduce-scatter of dK/dV
//   after backward, the same bytes; ring α-β (cp−1)α + (cp−1)·chunk/β each, all exposed
//   (attention waits for the gathered K/V). The gathered K/V kept for backward is not counted.
// Ulysses (Jacobs et al. 2023, DeepSpeed-Ulysses): all-to-alls from sequence- to head-sharded and
//   back, heads/t divisible by cp: forward Q, K, V (3·b·n·h/t elements) and the output
//   (b·n·h/t), backward their gradients, (cp−1)/cp of each leaving; α-β (cp−1)α + bytes/β
//   each, all exposed.
// Full recomputation reruns the forward's exchange in backward (the planner and the simulator
// count that pass; the lines below are one forward and one backward).
#pragma once

#include <utility>
#include <vector>

#include "core/theory/collectives.h"

namespace dtl::theory {

struct ModelSpec;
struct ParallelConfig;

// How attention gets the keys and values of the other cp ranks (`--cp-algo`).
enum class CpAlgo { ring, all_gather, ulysses };
// The option's words (`--cp-algo`: the command maps them to the enum).
inline constexpr std::pair<const char*, CpAlgo> kCpAlgoNames[] = {
    {"ring", CpAlgo::ring}, {"all-gather", CpAlgo::all_gather}, {"ulysses", CpAlgo::ulysses}};
const char* cp_algo_name(CpAlgo a);

// The K/V exchange of one layer and one micro-batch on one GPU (every figure per GPU).
struct CpRing {
  int cp = 1;
  double chunk_bytes = 0;  // 2·(b·s/cp)·(h/t)·2
  int forward_hops = 0, backward_kv_hops = 0, backward_dkv_hops = 0;
  double block_forward_s = 0, block_backward_s = 0;      // one block's attention compute
  double hop_s = 0;                                      // α + chunk/β
  double exposed_forward_s = 0, exposed_backward_s = 0;  // what the hops add to the layer
  double overlapped_s = 0;                               // hop time hidden behind blocks
  double forward_bytes() const { return forward_hops * chunk_bytes; }
  double backward_bytes() const { return (backward_kv_hops + backward_dkv_hops) * chunk_bytes; }
};

// One block's attention FLOPs forward, 4·b·(s/cp)²·h/t (backward: twice it).
double cp_block_forward_flops(const ModelSpec& m, const ParallelConfig& p);
// The ring of `p.cp` GPUs on `link` (0 hops for cp 1), each block taking the seconds given.
CpRing cp_ring(const ModelSpec& m, const ParallelConfig& p, Link link, double block_forward_s, double block_backward_s);
// One collective of the exchange, per layer and micro-batch on one GPU: the planner's ledger
// line (× layers × micro-batches) and the simulator's span.
struct CpLine {
  const char* what = "";
  bool backward = false;      // forward lines run again in backward under full recomputation
  int calls = 0;              // hops or collectives
  double bytes_per_call = 0;  // leaving this GPU
  double exposed_s = 0;       // all the calls' time not hidden behind attention blocks
};
// Every line of `p.cp_algo`'s exchange (none for cp 1); the ring's blocks take the seconds given.
std::vector<CpLine> cp_lines(const ModelSpec& m, const ParallelConfig& p, Link link, double block_forward_s,
                             double block_backward_s);

// Throws UsageError naming the rule: cp < 1, cp > 1 without a sequence length (a model given
// by --params alone), s not divisible by 2·cp (the zig-zag split), cp with experts, Ulysses
// with heads/tp not divisible by cp.
void validate_cp(const ModelSpec& m, const ParallelConfig& p);

}  // namespace dtl::theory
