// The planner's models and clusters (plan.h): the GPT's parameter count from its shape (with
// its experts, if any), the model and cluster presets with their sources, and a plan's formulas in words.
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/theory/plan.h"
#include "core/util/units.h"

namespace dtl::theory {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

double mlp_parameters(double h) { return 8 * h * h + 5 * h; }  // h → 4h → h with biases

// What E experts add to each layer over the dense MLP: E − 1 more MLPs and the router.
double moe_extra_parameters(const ModelSpec& m) {
  if (m.experts < 1) return 0;
  const double h = m.hidden;
  return double(m.layers) * ((m.experts - 1) * mlp_parameters(h) + h * m.experts);
}

}  // namespace

double ModelSpec::shape_parameters() const {
  const double L = layers, h = hidden;
  return L * (12 * h * h + 13 * h) + double(vocab) * h + double(seq) * h + 2 * h + moe_extra_parameters(*this);
}

double ModelSpec::shape_parameters_approx() const {
  const double L = layers, h = hidden;
  return 12 * L * h * h * (1 + 13 / (12 * h) + (double(vocab) + double(seq)) / (12 * L * h)) +
         moe_extra_parameters(*this);
}

double ModelSpec::expert_parameters() const {
  return experts > 0 ? double(layers) * experts * mlp_parameters(hidden) : 0;
}

double ModelSpec::active_parameters() const {
  return parameters() - (experts > 0 ? double(layers) * (experts - top_k) * mlp_parameters(hidden) : 0);
}

namespace {

struct ModelPreset {
  const char* name;
  double params;
  int layers, hidden, heads, seq, vocab;
};
// Nominal Ψ as the seeds count it (175B, not the shape's 174.6B); shapes: LLaMA-2 7B/13B/70B
// (dense-attention approximation), GPT-3 175B, Megatron-LM's 1T (Narayanan et al. 2021).
constexpr ModelPreset kModels[] = {
    {"7b", 7e9, 32, 4096, 32, 4096, 32000},     {"13b", 13e9, 40, 5120, 40, 4096, 32000},
    {"70b", 70e9, 80, 8192, 64, 4096, 32000},   {"175b", 175e9, 96, 12288, 96, 2048, 50257},
    {"1t", 1e12, 128, 25600, 160, 2048, 51200},
};

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kModels) names.push_back(p.name);
  return names;
}

ModelSpec model_preset(std::string_view name) {
  for (const auto& p : kModels)
    if (name == p.name) return {p.name, p.params, p.layers, p.hidden, p.heads, p.seq, p.vocab};
  throw UsageError("unknown model '" + std::string(name) + "'; the presets are " + joined(model_preset_names()) +
                   ", or give --params (and --layers --hidden --heads --seq --vocab)");
}

std::vector<std::string> cluster_preset_names() { return {"a100-80gb", "h100-80gb"}; }

ClusterSpec cluster_preset(std::string_view name) {
  // Bandwidths as the curriculum gives them: A100 NVLink 600 GB/s (seeds 001, 002), HDR
  // InfiniBand 200 Gb/s = 25 GB/s per GPU (seed 004); H100 NVLink 4 900 GB/s, NDR 400 Gb/s
  // = 50 GB/s per GPU (seed 000). Latencies are typical NCCL figures, not from the seeds.
  ClusterSpec c;
  c.name = std::string(name);
  if (name == "a100-80gb") {
    c.intra = {5e-6, 600e9};
    c.inter = {10e-6, 25e9};
    c.peak_flops = 312e12;  // bf16 dense
    c.memory_Bps = 2.039e12;
    c.sms = 108;
    c.spec_source =
        "A100 80GB SXM: 312 TFLOP/s bf16 dense and 2,039 GB/s HBM2e (NVIDIA A100 datasheet, 2021); "
        "108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020)";
  } else if (name == "h100-80gb") {
    c.intra = {5e-6, 900e9};
    c.inter = {10e-6, 50e9};
    c.peak_flops = 989e12;  // bf16 dense, SXM
    c.memory_Bps = 3.35e12;
    c.sms = 132;
    c.spec_source =
        "H100 SXM5 80GB: 989 TFLOP/s bf16 dense and 3.35 TB/s HBM3 (NVIDIA H100 datasheet, 2023); "
        "132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022)";
  } else {
    throw UsageError("unknown cluster '" + std::string(name) + "'; the presets are " + joined(cluster_preset_names()));
  }
  return c;
}

namespace {

// Context parallelism's note: the split, the weights' replicas, and the exchange of p.cp_algo.
std::string cp_words(const ParallelConfig& p) {
  const std::string exchange =
      p.cp_algo == CpAlgo::ring
          ? "ring attention per layer and micro-batch: cp−1 forward hops (again with full recomputation), cp−1 K/V + "
            "cp dK/dV backward, each 2·(b·s/cp)·(h/tp)·2 B, exposed beyond each block's attention 4·b·(s/cp)²·h/tp "
            "FLOPs (backward 2×) at peak·efficiency"
      : p.cp_algo == CpAlgo::all_gather
          ? "all-gather of K/V per layer and micro-batch, (cp−1)·2·(b·s/cp)·(h/tp)·2 B leaving, and a reduce-scatter "
            "of dK/dV in backward, the same bytes; exposed whole (the gathered K/V kept for backward not counted)"
          : "Ulysses per layer and micro-batch: all-to-alls of Q/K/V (3·b·(s/cp)·h/tp) and the output (b·(s/cp)·h/tp), "
            "forward and backward, (cp−1)/cp leaving, 2 B each; exposed whole";
  return "context parallelism: cp = " + std::to_string(p.cp) +
         " GPUs hold s/cp positions of each sequence (zig-zag "
         "split, balanced causal work assumed): activations, TP and PP messages ÷ cp; weights replicated over cp, ZeRO "
         "and the gradient reduction over dp·cp; " +
         exchange;
}

}  // namespace

// The plan's notes: each formula it used, in words (plan.h lists them all).
std::vector<std::string> plan_formulas(const Plan& out) {
  const auto& p = out.config;
  std::vector<std::string> f = {
      "model state: Ψ/(tp·pp) · " + std::string(zero_convention_name(p.convention)) + " with ZeRO-" +
          std::to_string(p.zero) +
          (p.cp > 1 ? " over dp·cp = " + std::to_string(p.dp * p.cp) : " over dp = " + std::to_string(p.dp)),
      "activations (Korthikanti et al. 2022, TP with sequence parallelism): per layer and micro-batch "
      "s·b·h·(34 + 5·a·s/h)/tp, selective 34·s·b·h/tp, full 2·s·b·h/tp; × ⌈L/pp⌉ layers × min(M, pp) in flight (1F1B)",
      "DP: ZeRO-0 one all-reduce 2(d−1)/d·2Ψ/(tp·pp) B per step; ZeRO-1 (distributed optimizer) one reduce-scatter + "
      "one all-gather; ZeRO-2 reduce-scatter per micro-batch + all-gather; ZeRO-3 per micro-batch 2 all-gathers + "
      "reduce-scatter, (d−1)/d·2Ψ/(tp·pp) B each",
      "TP: 4 all-reduces of b·s·h elements per layer per micro-batch (6 with full recomputation), 2(t−1)/t each",
      "PP: b·s·h/tp elements per micro-batch per boundary, forward and backward",
      "bubble (pp−1)/(M+pp−1); FLOPs per token: model 6Ψ + 12·L·h·s, hardware + the recomputed forward",
      "step: busy·(M+pp−1)/M + exposed communication (α-β, none overlapped); busy = hardware FLOPs·tokens / "
      "(gpus·peak·" +
          format_g(p.efficiency) + ")",
      std::string(p.cp > 1 ? "ranks: tp fastest, then cp, then dp, then pp (Megatron-LM's order)"
                           : "ranks: tp fastest, then dp, then pp (core/comm/topology.h)") +
          "; node = rank / " + std::to_string(out.cluster.gpus_per_node),
  };
  if (out.model.experts > 0)
    f.push_back(
        "experts: " + std::to_string(out.model.experts) + " per layer, top-" + std::to_string(out.model.top_k) +
        "; each GPU holds E/ep of them (ep = " + std::to_string(p.ep) +
        "), their state ZeRO'd over the dp/ep "
        "replicas; EP: 4 all-to-alls of (b·s/tp)·k·h elements per layer per micro-batch (6 with full "
        "recomputation), (ep−1)/ep leaving the GPU; FLOPs per token from the active Ψ; activations as the dense "
        "model's (a token's k expert MLPs counted once)");
  if (p.cp > 1) f.push_back(cp_words(p));
  if (!out.model.has_shape())
    f.push_back("no model shape: activations, TP and PP traffic, step time and tokens/s not computed");
  return f;
}

}  // namespace dtl::theory
