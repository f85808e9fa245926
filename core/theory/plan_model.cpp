// The planner's models and clusters (plan.h): the GPT's parameter count from its shape (with
// its experts, if any), and the model and cluster presets with their sources.
#include <string>
#include <vector>

#include "core/error.h"
#include "core/theory/plan.h"

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
  return 12 * L * h * h * (1 + 13 / (12 * h) + (double(vocab) + double(seq)) / (12 * L * h)) + moe_extra_parameters(*this);
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
    {"7b", 7e9, 32, 4096, 32, 4096, 32000},        {"13b", 13e9, 40, 5120, 40, 4096, 32000},
    {"70b", 70e9, 80, 8192, 64, 4096, 32000},      {"175b", 175e9, 96, 12288, 96, 2048, 50257},
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
    c.spec_source = "A100 80GB SXM: 312 TFLOP/s bf16 dense and 2,039 GB/s HBM2e (NVIDIA A100 datasheet, 2021); "
                    "108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020)";
  } else if (name == "h100-80gb") {
    c.intra = {5e-6, 900e9};
    c.inter = {10e-6, 50e9};
    c.peak_flops = 989e12;  // bf16 dense, SXM
    c.memory_Bps = 3.35e12;
    c.sms = 132;
    c.spec_source = "H100 SXM5 80GB: 989 TFLOP/s bf16 dense and 3.35 TB/s HBM3 (NVIDIA H100 datasheet, 2023); "
                    "132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022)";
  } else {
    throw UsageError("unknown cluster '" + std::string(name) + "'; the presets are " + joined(cluster_preset_names()));
  }
  return c;
}

}  // namespace dtl::theory
