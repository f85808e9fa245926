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

// What E experts add to each layer over the dense MLP: E − 1 more MLPs and the router (h·E).
double moe_extra_parameters(const ModelSpec& m) {
  if (m.experts < 1) return 0;
  return double(m.layers) * ((m.experts - 1) * m.mlp_parameters() + double(m.hidden) * m.experts);
}

}  // namespace

// GPT: h → ffn → h with biases (8h² + 5h at ffn = 4h). Llama: SwiGLU's gate, up and down, no biases.
double ModelSpec::mlp_parameters() const {
  const double h = hidden, f = ffn_size();
  return family == Family::llama ? 3 * h * f : 2 * h * f + f + h;
}

// GPT: QKV h·(3h) + 3h, projection h² + h, two LayerNorms 4h; Llama: Q h², K and V h·(h·kv/a) each,
// projection h², two RMSNorms 2h; with the MLP above.
double ModelSpec::layer_parameters() const {
  const double h = hidden, q = qkv_width();
  if (family == Family::llama) return h * q + h * h + 2 * h + mlp_parameters();
  return h * q + q + h * h + h + 4 * h + mlp_parameters();
}

double ModelSpec::shape_parameters() const {
  const double h = hidden, V = vocab;
  const double embeddings = family == Family::llama ? 2 * V * h + h                     // untied, the final RMSNorm
                                                    : V * h + double(seq) * h + 2 * h;  // tied, positions, final LN
  return layers * layer_parameters() + embeddings + moe_extra_parameters(*this);
}

double ModelSpec::shape_parameters_approx() const {
  const double L = layers, h = hidden;
  return 12 * L * h * h * (1 + 13 / (12 * h) + (double(vocab) + double(seq)) / (12 * L * h)) +
         moe_extra_parameters(*this);
}

double ModelSpec::expert_parameters() const { return experts > 0 ? double(layers) * experts * mlp_parameters() : 0; }

double ModelSpec::active_parameters() const {
  return parameters() - (experts > 0 ? double(layers) * (experts - top_k) * mlp_parameters() : 0);
}

namespace {

struct ModelPreset {
  const char* name;
  double params;  // nominal Ψ (the seeds' 7b..1t); 0: counted from the shape
  int layers, hidden, heads, seq, vocab;
  Family family = Family::gpt;
  int kv_heads = 0, ffn = 0, experts = 0, top_k = 1;
  double stated = 0;  // the count its authors publish (0: the nominal Ψ is the statement)
  const char* source = "";
};
// The seeds' presets: nominal Ψ with a shape for activations and FLOPs (LLaMA-2 7B/13B/70B as
// dense-attention GPTs, GPT-3 175B, Megatron-LM's 1T, Narayanan et al. 2021). The published
// shapes: counted from the shape, checked against the stated count (tests/core/plan_test.cpp).
const ModelPreset kModels[] = {
    {"7b", 7e9, 32, 4096, 32, 4096, 32000},
    {"13b", 13e9, 40, 5120, 40, 4096, 32000},
    {"70b", 70e9, 80, 8192, 64, 4096, 32000},
    {"175b", 175e9, 96, 12288, 96, 2048, 50257},
    {"1t", 1e12, 128, 25600, 160, 2048, 51200},
    {"gpt3-175b", 0, 96, 12288, 96, 2048, 50257, Family::gpt, 0, 0, 0, 1, 175.0e9,
     "Brown et al. 2020 (arXiv:2005.14165) Table 2.1: 96 layers, d_model 12288, 96 heads, context 2048, 175.0B"},
    {"llama3-8b", 0, 32, 4096, 32, 8192, 128256, Family::llama, 8, 14336, 0, 1, 8030261248.0,
     "Llama 3.1 8B config.json (meta-llama on Hugging Face); 8,030,261,248 parameters in its safetensors"},
    {"llama3-70b", 0, 80, 8192, 64, 8192, 128256, Family::llama, 8, 28672, 0, 1, 70553706496.0,
     "Llama 3.1 70B config.json; 70,553,706,496 parameters"},
    {"llama3-405b", 0, 126, 16384, 128, 8192, 128256, Family::llama, 8, 53248, 0, 1, 405853388800.0,
     "Llama 3.1 405B config.json (Dubey et al. 2024, Table 3: 126 layers, 16384, 128 heads, 8 KV heads, FFN 53248)"},
    {"mixtral-8x7b", 0, 32, 4096, 32, 32768, 32000, Family::llama, 8, 14336, 8, 2, 46702792704.0,
     "Jiang et al. 2024 (arXiv:2401.04088) Table 1: 8 experts, top-2, 46.7B total, 12.9B active"},
};

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kModels) names.push_back(p.name);
  return names;
}

ModelSpec model_preset(std::string_view name) {
  for (const auto& p : kModels)
    if (name == p.name) {
      ModelSpec m{p.name, p.params, p.layers, p.hidden, p.heads, p.seq, p.vocab};
      m.family = p.family, m.kv_heads = p.kv_heads, m.ffn = p.ffn, m.experts = p.experts, m.top_k = p.top_k;
      return m;
    }
  throw UsageError("unknown model '" + std::string(name) + "'; the presets are " + joined(model_preset_names()) +
                   ", or give --params (and --layers --hidden --heads --seq --vocab)");
}

PresetStatement model_preset_statement(std::string_view name) {
  for (const auto& p : kModels)
    if (name == p.name) return {p.stated > 0 ? p.stated : p.params, p.source};
  return {};
}

std::vector<std::string> cluster_preset_names() { return {"a100-80gb", "h100-80gb", "h200"}; }

ClusterSpec cluster_from_profile(const GpuProfile& g) {
  ClusterSpec c;
  c.name = g.name;
  c.gpu_memory = g.gpu_memory;
  c.intra = {g.nvlink.latency_s, g.nvlink.nccl_Bps};
  c.inter = {g.network.latency_s, g.network.nccl_Bps};
  c.peak_flops = g.peak_flops;
  c.gemm_flops = g.gemm_flops;
  c.memory_Bps = g.memory_Bps;
  c.kernel_gap_s = g.kernel_gap_s;
  c.flash_forward_flops = g.flash_forward_flops;
  c.flash_backward_flops = g.flash_backward_flops;
  c.flash2_forward_flops = g.flash2_forward_flops;
  c.flash2_backward_flops = g.flash2_backward_flops;
  c.sms = g.sms;
  c.arch = g.arch;
  c.nvls = g.nvls;
  c.sources = g.sources;
  for (const auto& line : g.sources) c.spec_source += (c.spec_source.empty() ? "" : "; ") + line;
  return c;
}

NcclFabric cluster_fabric(const ClusterSpec& c, int ranks, int per_node) {
  GpuProfile g;
  g.arch = c.arch;
  g.nvls = c.nvls;
  g.nvlink = {c.intra.beta_Bps, c.intra.beta_Bps, c.intra.alpha_s};
  g.network = {c.inter.beta_Bps, c.inter.beta_Bps, c.inter.alpha_s};
  NcclFabric f = nccl_fabric(g, ranks, per_node);
  f.nics_per_node = c.nics_per_node;
  return f;
}

// The presets are the GPU profiles (gpu_profile.h) under the planner's short names.
ClusterSpec cluster_preset(std::string_view name) {
  const std::string_view profile = name == "a100-80gb"   ? "a100-sxm4-80gb"
                                   : name == "h100-80gb" ? "h100-sxm5"
                                   : name == "h200"      ? "h200"
                                                         : "";
  if (profile.empty())
    throw UsageError("unknown cluster '" + std::string(name) + "'; the presets are " + joined(cluster_preset_names()));
  ClusterSpec c = cluster_from_profile(gpu_profile(profile));
  c.name = std::string(name);
  return c;
}

namespace {

// Context parallelism's note: the split, the weights' replicas, and the exchange of p.cp_algo.
std::string cp_words(const ParallelConfig& p) {
  const std::string exchange =
      p.cp_algo == CpAlgo::ring
          ? "ring attention per layer and micro-batch: cp−1 forward hops (again with full recomputation), cp−1 K/V + "
            "cp dK/dV backward, each 2·(b·s/cp)·(h/tp)·2 B, exposed beyond each block's attention 4·b·(s/cp)²·h/tp "
            "FLOPs (backward 2×) timed from their shapes"
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
  // Each note is one sentence written over several literals, not a list missing its commas.
  // NOLINTBEGIN(bugprone-suspicious-missing-comma)
  std::vector<std::string> f = {
      "model state: Ψ/(tp·pp) · " + std::string(zero_convention_name(p.convention)) + " with ZeRO-" +
          std::to_string(p.zero) +
          (p.cp > 1 ? " over dp·cp = " + std::to_string(p.dp * p.cp) : " over dp = " + std::to_string(p.dp)),
      "activations (Korthikanti et al. 2022, each tensor as the run keeps it: framework_memory.h): with sequence "
      "parallelism, dropout and unfused attention s·b·h·(34 + 5·a·s/h)/tp per layer and micro-batch, selective "
      "34·s·b·h/tp, full 2·s·b·h/tp; flash drops the s² terms, no dropout the masks, no sequence parallelism leaves "
      "10·s·b·h unsplit; × ⌈L/pp⌉ layers × min(M, pp) in flight (1F1B)",
      "DP: ZeRO-0 one all-reduce 2(d−1)/d·gΨ/(tp·pp) B per step (g: the gradients' bytes, 4 in fp32); ZeRO-1 "
      "(distributed optimizer) one reduce-scatter + one all-gather of 2Ψ/(tp·pp) B; ZeRO-2 reduce-scatter per "
      "micro-batch + all-gather; ZeRO-3 per micro-batch and layer all-gathers (forward and backward) and "
      "reduce-scatters, (d−1)/d of each",
      "TP: 4 all-reduces of b·s·h elements per layer per micro-batch (6 with full recomputation), 2(t−1)/t each",
      "PP: b·s·h/tp elements per micro-batch per boundary, forward and backward",
      "bubble (pp−1)/(M+pp−1); FLOPs per token: model 6Ψ + 12·L·h·s, hardware + the recomputed forward",
      "step: simulate's (core/theory/step_model.h): each layer's GEMMs and kernels from their shapes at the GPU's "
      "achieved rates, TP, EP and DP collectives as NCCL's tuning model times them, through the pipeline schedule; "
      "overlaps as the practice says: " +
          practice_words(p.practice),
      std::string(p.cp > 1 ? "ranks: tp fastest, then cp, then dp, then pp (Megatron-LM's order)"
                           : "ranks: tp fastest, then dp, then pp (core/comm/topology.h)") +
          "; node = rank / " + std::to_string(out.cluster.gpus_per_node),
  };
  // NOLINTEND(bugprone-suspicious-missing-comma)
  if (out.model.experts > 0)
    f.push_back(
        "experts: " + std::to_string(out.model.experts) + " per layer, top-" + std::to_string(out.model.top_k) +
        "; each GPU holds E/ep of them (ep = " + std::to_string(p.ep) +
        "), their state ZeRO'd over the dp/ep "
        "replicas; EP: 4 all-to-alls of (b·s/tp)·k·h elements per layer per micro-batch (6 with full "
        "recomputation), (ep−1)/ep leaving the GPU, on NCCL's model; FLOPs per token from the active Ψ; activations "
        "with each token's MLP tensors k times");
  if (p.cp > 1) f.push_back(cp_words(p));
  if (p.schedule == pipeline::ScheduleKind::interleaved)
    f.push_back("interleaved, v = " + std::to_string(p.chunks) +
                " chunks per stage: bubble (pp−1)/(v·M+pp−1); activations: the first stage's chunks in flight "
                "(pp−1)·2 + (v−1)·pp + 1, each of L/(pp·v) layers; PP: 2·v·M messages per middle stage");
  else if (p.pp > 1 && p.schedule != pipeline::ScheduleKind::one_f_one_b && p.schedule != pipeline::ScheduleKind::gpipe)
    f.push_back(std::string(pipeline::schedule_name(p.schedule)) + ": bubble " + out.bubble_formula +
                " (core/theory/schedule_formulas.cpp's source) with one layer's F, B and W from their GEMMs (W: the "
                "weight-gradient GEMMs, deferred past B where the schedule splits them); activations: the first "
                "stage's micro-batch-chunks in flight until their W, read from the schedule; PP: " +
                std::to_string(pp_sends_per_micro_batch(p)) + "·M messages on the busiest stage");
  if (!out.model.has_shape())
    f.push_back("no model shape: activations, TP and PP traffic, step time and tokens/s not computed");
  return f;
}

}  // namespace dtl::theory
