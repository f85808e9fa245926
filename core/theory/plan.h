// The arithmetic that decides a 3D (dp × tp × pp) configuration, as pure functions: per-GPU
// memory by part, communication per step by axis (intra- vs inter-node), the pipeline
// bubble, an estimated step time, tokens/s, MFU and HFU. `dtlab plan` prints it; the
// curriculum's worked examples (seeds 000–002) are its tests (tests/core/plan_test.cpp).
//
// Rank order (Megatron-LM's default tp-cp-dp-pp; core/comm/topology.h's tp, dp, pp when cp = 1):
// tp fastest, then cp, then dp, then pp:
//     rank = pp_rank · (dp · cp · tp) + dp_rank · (cp · tp) + cp_rank · tp + tp_rank,
//     node = rank / gpus_per_node
// so a TP group stays inside a node while tp divides gpus_per_node, and a CP ring next while
// cp·tp does. The ranks that hold the same weights (same tp and pp coordinates) are the
// dp·cp ranks tp apart: the gradient reduction's group.
//
// Formulas (Ψ parameters, L layers, h hidden, a heads, s sequence, b micro-batch size,
// M micro-batches, d/t/p the dp/tp/pp sizes); every byte count is per GPU:
//   Ψ from the shape        12·L·h² + V·h + s·h   (learned position embeddings)
//   model state             Ψ/(t·p) · ZeRO bytes per parameter over d ranks (core/theory/zero.h)
//   activations per layer   Korthikanti et al. 2022, 16-bit, TP with sequence parallelism
//                           (every term divided by t):  none  s·b·h·(34 + 5·a·s/h)/t
//                           selective  34·s·b·h/t      full (layer inputs only)  2·s·b·h/t
//                           × ⌈L/p⌉ layers × min(M, p) micro-batches in flight (1F1B, first stage)
//   DP traffic              ring collectives of the 16-bit gradients/parameters, Ψ/(t·p) each
//                           ZeRO-0: one all-reduce per step 2(d−1)/d; ZeRO-1 (the distributed
//                           optimizer): one reduce-scatter + one all-gather; ZeRO-2: a
//                           reduce-scatter per micro-batch + one all-gather; ZeRO-3: per
//                           micro-batch two all-gathers and a reduce-scatter, (d−1)/d each
//   TP traffic              4 all-reduces of b·s·h elements per layer per micro-batch (2 forward,
//                           2 backward; 6 with full recomputation), 2(t−1)/t each
//   PP traffic              b·s·h/t elements per micro-batch per boundary, forward and backward
//                           (the busiest, middle stage sends both)
//   bubble                  (p−1)/(M+p−1) of the step (GPipe and 1F1B)
//   FLOPs per token         model 6Ψ + 12·L·h·s (Narayanan et al. 2021); hardware adds the
//                           recomputed forward: full 2Ψ + 4·L·h·s, selective 4·L·h·s
//   step time               busy = hardware FLOPs · tokens / (gpus · peak · efficiency);
//                           busy·(M+p−1)/M + exposed communication (α-β per link class:
//                           TP (M+p−1)·its collectives, PP 2·M sends (seed 002, problem 3),
//                           DP all of it — nothing overlapped)
// A model given by Ψ alone (no layers/hidden/heads/seq) gets its model state and DP traffic;
// activations, TP and PP traffic, tokens and time stay 0.
//
// Mixture of experts (ModelSpec::experts E > 0, top_k k; ParallelConfig::ep): every layer's
// MLP becomes E experts, each the dense MLP (8h² + 5h), chosen by a router (h·E) per token:
//   Ψ                       the dense count + L·((E−1)·(8h² + 5h) + h·E); active per token:
//                           the experts a token skips left out, Ψ − L·(E−k)·(8h² + 5h)
//   experts' state          L·E·(8h² + 5h)/(ep·tp·pp) per GPU (EP carved out of dp: ep divides
//                           dp and E), ZeRO over the dp/ep replicas of each expert; the rest as above
//   EP traffic              per MoE layer and micro-batch an all-to-all to dispatch and one to
//                           combine, forward and backward (6 with full recomputation), each
//                           (b·s/t)·k·h elements of which (ep−1)/ep leave the GPU when the
//                           load is balanced; timed on NCCL's model inside each layer (step_model.h)
//   DP traffic              the dense part over dp, the experts' over their dp/ep replicas
//   FLOPs per token         6 · the active Ψ + 12·L·h·s
//   activations             the dense model's with each token's MLP tensors k times (its k experts,
//                           framework_memory.h)
//
// Context parallelism (ParallelConfig::cp; context_parallel.h for ring attention's exchange):
// each GPU of a cp group holds s/cp positions of every sequence (zig-zag split: s divisible by
// 2·cp), so world = dp·tp·pp·cp and the tokens per step stay dp·M·b·s:
//   activations             every formula above ÷ cp, under every recomputation (each term of
//                           Korthikanti's count is per position; the scores' 5·a·s²·b/t term is
//                           s/cp queries against s keys)
//   model state             Ψ/(tp·pp), replicated over cp; ZeRO shards over dp·cp, as
//                           Megatron's distributed optimizer does (the gradients are reduced
//                           over dp·cp anyway, so the shards come with the reduce-scatter)
//   DP traffic              the collectives above over d = dp·cp ranks
//   TP, PP traffic          b·(s/cp)·h elements where b·s·h stood
//   CP traffic              ring K/V hops of 2·(b·s/cp)·(h/t)·2 B: cp−1 forward (again with full
//                           recomputation), cp−1 K/V and cp dK/dV backward, per layer and
//                           micro-batch; exposed beyond each block's attention compute
//                           (4·b·(s/cp)²·h/t FLOPs forward, twice backward, at peak·efficiency)
//                           and, as TP, in every slot of the pipeline: × (M+p−1)/M; all-gather
//                           and Ulysses (cp_algo) their collectives, exposed whole
//   FLOPs                   unchanged in total, ÷ cp per GPU (the balanced zig-zag split assumed)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/theory/collectives.h"
#include "core/theory/context_parallel.h"
#include "core/theory/gpu_profile.h"
#include "core/theory/nccl_model.h"
#include "core/theory/practice.h"
#include "core/theory/recompute.h"
#include "core/theory/schedule.h"
#include "core/theory/zero.h"

namespace dtl::theory {

// gpt: GPT-2/3 (LayerNorm with biases, GELU MLP of ffn = 4h, learned positions, biases, tied
// embeddings); llama: Llama-style (RMSNorm, SwiGLU MLP of its own ffn size, rotary positions (no
// parameters), grouped-query attention with kv_heads, no biases, untied embeddings).
enum class Family { gpt, llama };
inline constexpr std::pair<const char*, Family> kFamilyNames[] = {{"gpt", Family::gpt}, {"llama", Family::llama}};

struct ModelSpec {
  std::string name = "custom";
  double params = 0;  // Ψ as counted (a preset's nominal size); 0: from the shape
  int layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  int experts = 0, top_k = 1;  // experts 0: a dense model
  Family family = Family::gpt;
  int kv_heads = 0;  // key/value heads (grouped-query attention); 0: heads
  int ffn = 0;       // the MLP's inner size; 0: 4h
  bool has_shape() const { return layers > 0 && hidden > 0 && heads > 0 && seq > 0; }
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  double ffn_size() const { return ffn > 0 ? ffn : 4.0 * hidden; }
  double qkv_width() const { return hidden + 2.0 * kv() * hidden / heads; }  // Q, K and V's output features
  double mlp_parameters() const;                                             // one MLP (one expert)
  double layer_parameters() const;                                           // one layer with a dense MLP
  // Every expert of every layer (L·E·(8h² + 5h); 0 for a dense model), and what one token
  // uses of Ψ (all of it, dense).
  double expert_parameters() const;
  double active_parameters() const;
  // The GPT's exact count: per layer QKV 3h²+3h, projection h²+h, MLP 8h²+5h, two
  // LayerNorms 4h (12h² + 13h); the tied token embedding V·h, positions s·h, the final
  // LayerNorm 2h (GPT-2 small: 124,439,808).
  double shape_parameters() const;
  // Megatron-LM's closed form 12·L·h²·(1 + 13/(12h) + (V+s)/(12·L·h)): the exact count
  // less the final LayerNorm.
  double shape_parameters_approx() const;
  double parameters() const { return params > 0 ? params : shape_parameters(); }
};
// "7b", "13b", "70b", "175b" (GPT-3), "1t" (Megatron's 1T); throws UsageError naming them.
// Llama 3's and Mixtral's published shapes: "gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b",
// "mixtral-8x7b" (Ψ counted from the shape).
ModelSpec model_preset(std::string_view name);
std::vector<std::string> model_preset_names();
// The parameter count a preset's authors state, and where (empty for an unknown name).
struct PresetStatement {
  double params = 0;
  std::string source;
};
PresetStatement model_preset_statement(std::string_view name);

struct ClusterSpec {
  std::string name = "custom";
  int gpus = 0, gpus_per_node = 8;
  double gpu_memory = 80e9;  // bytes (GB = 1e9, as the curriculum counts "80 GB")
  // Per GPU and per direction: α = one hop's latency, β = the bus bandwidth NCCL reaches on the
  // tier (NVLink in a node, the network between nodes; gpu_profile.h says where each came from).
  Link intra, inter;
  int nics_per_node = 0;       // 0: one NIC per GPU
  double peak_flops = 312e12;  // datasheet bf16 dense: what MFU divides by
  // The GPU for compute from shapes (core/theory/kernel_time.h): the achieved cuBLAS rate at
  // its best shape, achieved HBM bandwidth, the gap between kernels, SMs, and the output tile
  // one thread block of a large 16-bit GEMM computes (CUTLASS's and cuBLAS's common 128 × 128:
  // an assumption, not a documented figure).
  double gemm_flops = 271.2e12;
  double memory_Bps = 1.80e12;
  double kernel_gap_s = 1e-6;
  double flash_forward_flops = 228e12, flash_backward_flops = 197e12;    // achieved by FlashAttention (gpu_profile.h)
  double flash2_forward_flops = 228e12, flash2_backward_flops = 197e12;  // FlashAttention-2 (PyTorch's SDPA)
  int sms = 108;
  int tile_m = 128, tile_n = 128;
  GpuArch arch = GpuArch::ampere;
  bool nvls = false;                 // NVLink SHARP all-reduce in a node (nccl_model.h)
  std::vector<std::string> sources;  // the GPU profile's sources
  std::string spec_source;           // the same, one line
};
// The cluster's GPUs of a profile (gpu_profile.h): its figures into the fields above.
ClusterSpec cluster_from_profile(const GpuProfile& g);
// The NCCL communicator of `ranks` ranks, `per_node` on each node, on this cluster (nccl_model.h).
NcclFabric cluster_fabric(const ClusterSpec& c, int ranks, int per_node);
// "a100-80gb", "h100-80gb", "h200" (gpus left 0: the run's dp·tp·pp); throws UsageError naming them.
ClusterSpec cluster_preset(std::string_view name);
std::vector<std::string> cluster_preset_names();

struct ParallelConfig {
  int dp = 1, tp = 1, pp = 1;
  int zero = 0;  // 0 (plain DDP) .. 3, over the dp ranks
  int micro_batch_size = 1, micro_batches = 1;
  Recompute recompute = Recompute::none;
  ZeroConvention convention = ZeroConvention::sixteen;
  double efficiency = 0.5;        // achieved / peak FLOP/s of the compute
  int ep = 1;                     // expert parallelism, within dp (a mixture-of-experts model only)
  int cp = 1;                     // context parallelism: the sequence split over cp GPUs (world = dp·tp·pp·cp)
  CpAlgo cp_algo = CpAlgo::ring;  // how attention reaches the other ranks' K/V (context_parallel.h)
  Practice practice;              // what the run does beyond the layout (practice.h): megatron-core's defaults
  // The pipeline schedule (schedule.h): gpipe, 1f1b, or interleaved with `chunks` model
  // chunks per stage (Megatron's virtual pipeline, --num-layers-per-virtual-pipeline-stage).
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  int chunks = 1;
  // Uneven stages (Megatron-LM's --decoder-first/last-pipeline-num-layers): the layers on the
  // first and the last stage, the rest split evenly over the others (0: the even split). Llama 3
  // took one layer off each end to balance the embedding and the LM head (Dubey et al. 2024 §3.3.2).
  int first_stage_layers = 0, last_stage_layers = 0;
};

enum class Axis { dp, tp, pp, ep, cp };
const char* axis_name(Axis a);

// Memory a framework holds beyond model state and activations (framework_memory.h), one line each.
struct MemoryLine {
  std::string id, label;
  double bytes = 0;  // per GPU
  std::string source;
  bool counted = true;  // in the total (the busiest GPU's); false: another stage's
};

struct Memory {
  double params = 0, grads = 0, optimizer = 0;  // under the run's convention
  double model_state_sixteen = 0, model_state_twelve = 0, model_state_eight = 0;
  double activations = 0;  // under the run's recomputation
  double activations_none = 0, activations_selective = 0, activations_full = 0;
  double capacity = 0;
  std::vector<MemoryLine> framework;  // beyond model state and activations
  double model_state() const { return params + grads + optimizer; }
  double framework_bytes() const {
    double b = 0;
    for (const auto& l : framework) b += l.counted ? l.bytes : 0;
    return b;
  }
  double total() const { return model_state() + activations + framework_bytes(); }
  double headroom() const { return capacity - total(); }  // < 0: misses by that much
  bool fits() const { return headroom() >= 0; }
};

// One line of the communication ledger: bytes one GPU sends per step for one collective.
struct LedgerEntry {
  Axis axis = Axis::dp;
  std::string collective;  // "all_reduce gradients", ...
  int calls = 0;           // per step
  double bytes = 0;        // per GPU per step (the busiest GPU of the group)
  double intra_bytes = 0, inter_bytes = 0;
  double share = 0;  // of every axis' bytes together
  bool crosses_nodes = false;
  double time_s = 0;  // α-β time on the critical path
};

// The step of the stage that ends last (step_model.h): its compute, its exposed communication
// by axis, its optimizer step, and the rest of the step it spends waiting (the pipeline's
// bubble and its sends). pp stays 0: a send delays the next stage and shows in its bubble.
struct StepTime {
  double busy = 0, bubble = 0, tp = 0, pp = 0, dp = 0, ep = 0, cp = 0, optimizer = 0;
  int stage = 0;  // which stage ends last
  double total() const { return busy + bubble + tp + pp + dp + ep + cp + optimizer; }
};

struct Plan {
  ModelSpec model;
  ClusterSpec cluster;
  ParallelConfig config;
  double psi = 0;
  Memory memory;
  std::vector<LedgerEntry> ledger;
  double bubble = 0;  // the schedule's published bubble: (p−1)/(M+p−1) for GPipe and 1F1B (plan_schedule.cpp)
  const char* bubble_formula = "(p−1)/(M+p−1)";
  bool bubble_tiled = false;  // the formula counts steps tiled back to back (Qi et al.'s zb-h2, zb-v)
  StepTime time;
  double tokens_per_step = 0, tokens_per_s = 0;
  double model_flops_per_token = 0, hardware_flops_per_token = 0;
  double mfu = 0, hfu = 0;
  CpRing cp_ring;                     // one layer's ring exchange per micro-batch (cp > 1)
  std::vector<std::string> formulas;  // the formulas used, in words
  double bytes_on(Axis a) const;      // the ledger's bytes on one axis
};

// The planner's memory per GPU from what one GPU holds, for a model that is not a
// transformer given by its shape (plan() below uses both; the grid lab compares its MLP
// with them, labs/grid/grid_planner.cpp):
//   model state   rank_params (Ψ/(tp·pp) for an evenly split model) · the bytes per parameter
//                 of `precision` ({4, 4, 8} in fp32), ZeRO `zero` over `dp` ranks (zero.h)
//   activations   layer_bytes per layer and micro-batch (a transformer: Korthikanti's
//                 s·b·h·(34 + 5·a·s/h)/t) × layers on the stage × min(M, pp) micro-batches in
//                 flight (1F1B's first stage)
// The first sets params, grads and optimizer only.
Memory rank_model_state(double rank_params, int zero, int dp, ZeroPrecision precision);
double activations_in_flight(double layer_bytes, int stage_layers, int micro_batches, int pp);

// The layers on each pipeline stage: L/P each, the first L mod P one more, or the uneven split
// `first_stage_layers`/`last_stage_layers` ask for (the middle stages evenly, as above).
std::vector<int> stage_layer_counts(int layers, const ParallelConfig& p);
// The most layers one stage runs (the stage that sets the per-micro-batch call counts).
int most_stage_layers(int layers, const ParallelConfig& p);
// Layer-activations held at the peak by the busiest stage: the largest, over stages s, of
// (layers on s / v) × the micro-batch-chunks its schedule keeps in flight there (1F1B: min(M,
// pp − s); others pipeline::max_in_flight(schedule, s)). Times one layer's activation bytes
// (one micro-batch) it is the planner's activation memory per GPU.
double layers_in_flight(int layers, const ParallelConfig& p);

// Throws UsageError naming the broken constraint: a size < 1, dp·tp·pp·cp ≠ gpus, tp not
// dividing heads, pp > layers, ZeRO outside 0–3, efficiency outside (0, 1].
void validate(const ModelSpec& m, const ClusterSpec& c, const ParallelConfig& p);
// The part of validate() about --schedule and --chunks (plan_schedule.cpp).
void validate_schedule(const ModelSpec& m, const ParallelConfig& p);

// The busiest stage's sends per micro-batch: an F sends its output, a B its input gradient, to the
// next and previous virtual stage when that one sits on another stage (a V schedule's turn, from
// virtual stage pp−1 to pp, stays on the last stage).
int pp_sends_per_micro_batch(const ParallelConfig& p);

// The schedule's published bubble (pipeline::published_bubble) with one layer's F, full B and W
// times (their ratio is what counts; without a shape F = B/2 = W); formula: its words.
double schedule_bubble(const ParallelConfig& p, const pipeline::ActionTimes& layer, const char** formula,
                       bool* tiled = nullptr);
Plan plan(const ModelSpec& m, const ClusterSpec& c, const ParallelConfig& p);
// The formulas a plan used, in words (its notes; plan_model.cpp).
std::vector<std::string> plan_formulas(const Plan& out);

// α-β time of a ring all-reduce of `bytes` over n ranks on one link: 2(n−1)α + 2(n−1)/n·bytes/β.
double ring_all_reduce_seconds(int n, double bytes, Link link);

struct SearchOptions {
  int global_batch = 0;  // sequences per step; 0: max(512, 2·gpus)
  int micro_batch_size = 1;
  ZeroConvention convention = ZeroConvention::sixteen;
  double efficiency = 0.5;
  Practice practice;  // what every configuration's run does (practice.h)
  std::size_t keep = 10;
};
struct Ranked {
  Plan plan;
  std::string loses_because;  // why it is slower than the one above ("" for the first)
};
// Every dp·tp·pp = gpus with tp ≤ gpus per node dividing it and the heads, pp dividing the
// layers, M = global batch / (dp·b) a whole number ≥ p, ZeRO 0–3 and each recomputation;
// those that fit, fastest first (ties: less memory first; of ZeRO stages that differ only in
// memory, the smallest), the top `keep`.
// Why the configurations search() tried did not make the list, counted by the first rule
// each broke; words() names the rule that left nothing, with the nearest fix.
struct SearchRejections {
  int tp_rule = 0;        // tp above a node, not dividing it or the heads
  int pp_rule = 0;        // pp not dividing the layers
  int batch_rule = 0;     // the global batch not a multiple of dp·b
  int micro_batches = 0;  // M = global batch / (dp·b) below pp
  int memory = 0;         // over the GPU's memory at every ZeRO stage and recomputation
  std::string words(int gpus, int global_batch) const;
};
std::vector<Ranked> search(const ModelSpec& m, const ClusterSpec& c, int gpus, const SearchOptions& o = {},
                           SearchRejections* why = nullptr);
// The global batch search() uses: o.global_batch, or max(512, 2·gpus).
int search_global_batch(const SearchOptions& o, int gpus);

}  // namespace dtl::theory
