// Options shared by `dtlab plan` and `dtlab simulate` (plan_options.h).
#include "labs/cli/plan_options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "labs/cli/validators.h"
#include "labs/report_format.h"
#include "labs/train/gpt.h"

namespace dtl::cli {

namespace th = dtl::theory;

namespace {

// "175e9", "175B", "1.2T", "13G": a count with an optional K/M/G/B/T suffix (powers of 1000).
double parse_count(const std::string& text, const char* what, bool bytes) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) { used = 0; }
  std::string rest = used ? text.substr(used) : text;
  if (bytes && !rest.empty() && (rest.back() == 'B' || rest.back() == 'b') && rest.size() > 1) rest.pop_back();
  double scale = 1;
  if (rest == "K" || rest == "k")
    scale = 1e3;
  else if (rest == "M")
    scale = 1e6;
  else if (rest == "G" || (!bytes && rest == "B"))
    scale = 1e9;
  else if (rest == "T")
    scale = 1e12;
  else if (!rest.empty())
    used = 0;
  if (used == 0 || !std::isfinite(v) || v <= 0)
    throw UsageError(std::string(what) + " '" + text +
                     "' is not a positive number (suffixes K, M, G, T: powers of 1000)");
  return v * scale;
}

// A preset's UsageError with the option it came from in front ("--model: unknown model ...").
template <class F>
auto with_option(const char* option, F&& f) {
  try {
    return f();
  } catch (const UsageError& e) { throw UsageError(std::string(option) + ": " + e.what()); }
}

}  // namespace

th::ZeroConvention parse_convention(const std::string& text) {
  if (text == "16") return th::ZeroConvention::sixteen;
  if (text == "12") return th::ZeroConvention::twelve;
  if (text == "8") return th::ZeroConvention::eight;
  throw UsageError("--convention is 16, 12 or 8 bytes per parameter, not '" + text + "'");
}

namespace {

struct ShapeOption {
  const char* flag;
  int given;
  int unset;  // PlanArgs' value when the option was not given (--vocab may be 0: its is -1)
  int th::ModelSpec::*field;
};

std::vector<ShapeOption> shape_options(const PlanArgs& a) {
  return {{"--layers", a.layers, 0, &th::ModelSpec::layers},
          {"--hidden", a.hidden, 0, &th::ModelSpec::hidden},
          {"--heads", a.heads, 0, &th::ModelSpec::heads},
          {"--seq", a.seq, 0, &th::ModelSpec::seq},
          {"--vocab", a.vocab, -1, &th::ModelSpec::vocab}};
}
bool is_given(const ShapeOption& o) { return o.given != o.unset; }

// --model with shape options: each must be the preset's own (another value is another model).
void require_preset_shape(const th::ModelSpec& preset, const std::vector<ShapeOption>& shape) {
  for (const ShapeOption& o : shape)
    if (is_given(o) && o.given != preset.*o.field)
      throw UsageError("--model " + preset.name + " has " + o.flag + " " + std::to_string(preset.*o.field) + ", not " +
                       std::to_string(o.given) + ": that is another model; drop --model to plan the shape you give " +
                       "(all of --layers --hidden --heads --seq --vocab)");
}

th::ModelSpec model_from_shape(const std::vector<ShapeOption>& shape) {
  th::ModelSpec m;
  std::string missing, words;
  for (const ShapeOption& o : shape) {
    if (!is_given(o))
      missing += std::string(missing.empty() ? "" : " ") + o.flag;
    else
      m.*o.field = o.given;
  }
  if (!missing.empty())
    throw UsageError("a model from its shape needs all of --layers --hidden --heads --seq --vocab; missing " + missing +
                     " (or give --model PRESET, or --params N alone)");
  // A shape the labs refuse (heads that do not divide hidden) is refused here in their words,
  // not planned into nonsense (labs/train: gpt_config_problem; plan's --vocab 0 means no embedding).
  const GptConfig lab_shape{std::max(m.vocab, 1), m.seq, m.hidden, m.heads, m.layers, 1};
  if (const std::string problem = gpt_config_problem(lab_shape, 1, ex::TpMode::plain); !problem.empty())
    throw UsageError("the shape --layers --hidden --heads --seq --vocab: " + problem);
  m.name = "custom (from its shape)";
  return m;
}

}  // namespace

namespace {

// --experts E turns every layer's MLP into E experts: Ψ is then the shape's count with them
// (a preset's nominal Ψ is its dense model's), and the name says so. --top-k needs --experts.
th::ModelSpec with_experts(th::ModelSpec m, const PlanArgs& a) {
  if (a.experts == 0) {
    if (a.top_k) throw UsageError("--top-k " + std::to_string(a.top_k) + " picks experts per token: add --experts E");
    return m;
  }
  m.experts = a.experts;
  m.top_k = a.top_k ? a.top_k : 2;
  m.params = 0;  // counted from the shape, experts included
  m.name += " with " + std::to_string(m.experts) + " experts (top-" + std::to_string(m.top_k) + ")";
  return m;
}

}  // namespace

namespace {

// --family, --kv-heads, --ffn: on a shape they describe it; on a preset they must be its own.
th::ModelSpec with_family(th::ModelSpec m, const PlanArgs& a) {
  const bool preset = !a.model.empty() || (a.layers == 0 && a.hidden == 0);
  auto differs = [&](bool given, bool same, const std::string& what) {
    if (given && preset && !same)
      throw UsageError("--model " + m.name + " is not " + what +
                       ": that is another model; drop --model and give the "
                       "whole shape (--layers --hidden --heads --seq --vocab) with it");
  };
  differs(a.family != th::Family::gpt, m.family == a.family, "--family llama");
  differs(a.kv_heads > 0, m.kv() == a.kv_heads, "--kv-heads " + std::to_string(a.kv_heads));
  differs(a.ffn > 0, m.ffn_size() == a.ffn, "--ffn " + std::to_string(a.ffn));
  if (preset) return m;
  m.family = a.family, m.kv_heads = a.kv_heads, m.ffn = a.ffn;
  return m;
}

}  // namespace

th::ModelSpec model_from(const PlanArgs& a) {
  const std::vector<ShapeOption> shape = shape_options(a);
  bool shape_given = false;
  for (const ShapeOption& o : shape) shape_given = shape_given || is_given(o);
  if (!a.params.empty()) {
    if (!a.model.empty())
      throw UsageError("--params " + a.params + " and --model " + a.model + " both set the model: keep one");
    if (shape_given)
      throw UsageError("--params " + a.params +
                       " gives Ψ and --layers/--hidden/--heads/--seq/--vocab a shape with a Ψ of "
                       "its own: give --params alone, or the whole shape alone");
    if (a.experts)
      throw UsageError("--experts makes each layer's MLP E experts, and --params " + a.params +
                       " has no layers: give the "
                       "shape (or --model) instead");
    th::ModelSpec m;
    m.params = parse_count(a.params, "--params", false);
    if (m.params < 1)
      throw UsageError("--params " + a.params + " is less than one parameter: give a count such as 7e9 or 7B");
    m.name = "--params " + a.params + " (no shape)";
    return m;
  }
  th::ModelSpec m = a.model.empty() && shape_given
                        ? model_from_shape(shape)
                        : with_option("--model", [&] { return th::model_preset(a.model.empty() ? "175b" : a.model); });
  if (!shape_given || !a.model.empty()) require_preset_shape(m, shape);
  return with_experts(with_family(m, a), a);
}

th::ClusterSpec cluster_from(const PlanArgs& a) {
  th::ClusterSpec c = with_option("--cluster", [&] { return th::cluster_preset(a.cluster); });
  // each up to 10^7, cp up to 10^4: 64 bits hold the product
  const std::int64_t product = std::int64_t(a.dp) * a.tp * a.pp * a.cp;
  if (product > 10000000)
    throw UsageError("--dp " + std::to_string(a.dp) + " × --tp " + std::to_string(a.tp) + " × --pp " +
                     std::to_string(a.pp) + (a.cp > 1 ? " × --cp " + std::to_string(a.cp) : "") + " = " +
                     std::to_string(product) + " GPUs, more than the 10,000,000 the planner takes: lower them");
  c.gpus = a.gpus ? a.gpus : int(product);
  if (a.gpus_per_node) c.gpus_per_node = a.gpus_per_node;
  if (!a.gpu_memory.empty()) c.gpu_memory = parse_count(a.gpu_memory, "--gpu-memory", true);
  if (a.intra_bw > 0) c.intra.beta_Bps = a.intra_bw * 1e9;
  if (a.inter_bw > 0) c.inter.beta_Bps = a.inter_bw * 1e9;
  if (a.intra_us >= 0) c.intra.alpha_s = a.intra_us * 1e-6;
  if (a.inter_us >= 0) c.inter.alpha_s = a.inter_us * 1e-6;
  if (a.peak_tflops > 0) {  // the achieved GEMM rate keeps its share of the peak (gpu_profile.h)
    c.gemm_flops *= a.peak_tflops * 1e12 / c.peak_flops;
    c.peak_flops = a.peak_tflops * 1e12;
  }
  return c;
}

// The chunks per stage the schedule runs: --chunks for the interleaved ones, 2 for the V ones
// (given --chunks there is an error, as with the one-chunk schedules: validate_schedule).
namespace {
int chunks_of(const PlanArgs& a) {
  const bool vee = a.schedule == pipeline::ScheduleKind::zb_v || a.schedule == pipeline::ScheduleKind::dualpipe_v;
  if (vee && a.chunks != 1)
    throw UsageError(std::string("--schedule ") + pipeline::schedule_name(a.schedule) +
                     " folds each stage's layers into a V of 2 chunks: drop --chunks " + std::to_string(a.chunks));
  return vee ? 2 : a.chunks;
}
}  // namespace

th::ParallelConfig config_from(const PlanArgs& a) {
  return {a.dp,
          a.tp,
          a.pp,
          a.zero,
          a.micro_batch_size,
          a.micro_batches,
          th::parse_recompute(a.recompute),
          parse_convention(a.convention),
          a.efficiency,
          a.ep,
          a.cp,
          a.cp_algo,
          a.practice,
          a.schedule,
          chunks_of(a),
          a.first_stage_layers,
          a.last_stage_layers};
}

void require_cp_options_apply(const CLI::App& p, const PlanArgs& a) {
  if (p.count("--cp-algo") && a.cp < 2)
    throw UsageError(std::string("--cp-algo ") + th::cp_algo_name(a.cp_algo) +
                     " chooses how context-parallel ranks "
                     "exchange keys and values: add --cp N (N > 1)");
}

namespace {

// The model: a preset, a parameter count or a shape (and its family).
void add_model_options(CLI::App* p, PlanArgs& a) {
  p->add_option("--model", a.model,
                "Preset: 7b 13b 70b 175b 1t gpt3-175b llama3-8b llama3-70b llama3-405b mixtral-8x7b (default 175b, "
                "unless --params or a shape is given)");
  p->add_option("--params", a.params, "Parameters instead of a preset (175e9, 175B, 1.2T)");
  p->add_option("--layers", a.layers, "Transformer layers L")->check(whole_range(1, 100000));
  p->add_option("--family", a.family, "gpt (LayerNorm, GELU 4h, biases, tied) or llama (RMSNorm, SwiGLU, GQA, untied)")
      ->transform(named_choice(th::kFamilyNames))
      ->option_text("gpt|llama");
  p->add_option("--kv-heads", a.kv_heads, "Key/value heads (grouped-query attention; dividing --heads)")
      ->check(whole_range(1, 100000));
  p->add_option("--ffn", a.ffn, "The MLP's inner size (default 4h)")->check(whole_range(1, 100000000));
  p->add_option("--hidden", a.hidden, "Hidden size h")->check(whole_range(1, 10000000));
  p->add_option("--heads", a.heads, "Attention heads a")->check(whole_range(1, 100000));
  p->add_option("--seq", a.seq, "Sequence length s")->check(whole_range(1, 100000000));
  p->add_option("--vocab", a.vocab, "Vocabulary V")->check(whole_range(0, 100000000));
}

// The cluster: a preset and what overrides it.
void add_cluster_options(CLI::App* p, PlanArgs& a) {
  p->add_option("--cluster", a.cluster, "Preset: a100-80gb h100-80gb")->capture_default_str();
  p->add_option("--gpus", a.gpus, "GPUs N (default dp·tp·pp)")->check(whole_range(1, 10000000));
  p->add_option("--gpus-per-node", a.gpus_per_node, "GPUs per node (preset: 8)")->check(whole_range(1, 1024));
  p->add_option("--gpu-memory", a.gpu_memory, "Memory per GPU (80G = 80e9 bytes, as the curriculum's 80 GB)");
  p->add_option("--intra-bw", a.intra_bw, "Intra-node bandwidth per GPU, GB/s")->check(finite_range(1e-6, 1e9));
  p->add_option("--inter-bw", a.inter_bw, "Inter-node bandwidth per GPU, GB/s")->check(finite_range(1e-6, 1e9));
  p->add_option("--intra-latency", a.intra_us, "Intra-node latency α, µs")->check(finite_range(0, 1e9));
  p->add_option("--inter-latency", a.inter_us, "Inter-node latency α, µs")->check(finite_range(0, 1e9));
  p->add_option("--peak-tflops", a.peak_tflops, "Peak TFLOP/s per GPU")->check(finite_range(1e-6, 1e9));
}

// --schedule, --chunks: every built-in schedule of the pipeline lab (core/theory/schedule.h).
void add_schedule_options(CLI::App* p, PlanArgs& a) {
  std::vector<std::pair<std::string, pipeline::ScheduleKind>> schedules;
  std::string names;
  for (pipeline::ScheduleKind k : pipeline::builtin_schedules()) {
    schedules.emplace_back(pipeline::schedule_name(k), k);
    names += (names.empty() ? "" : "|") + std::string(pipeline::schedule_name(k));
  }
  p->add_option("--schedule", a.schedule,
                "Pipeline schedule (interleaved and interleaved-zb with --chunks v; zb-v and dualpipev fold 2 "
                "chunks per stage in a V)")
      ->transform(named_choice(schedules))
      ->option_text(names);
  p->add_option("--chunks", a.chunks,
                "Model chunks per stage v (--schedule interleaved or interleaved-zb; layers a multiple of pp·v)")
      ->check(whole_range(1, 64))
      ->capture_default_str();
  p->add_option("--first-stage-layers", a.first_stage_layers,
                "Layers on the first pipeline stage, the rest split evenly (Megatron-LM's "
                "--decoder-first-pipeline-num-layers; 0: the even split)")
      ->check(whole_range(0, 100000));
  p->add_option("--last-stage-layers", a.last_stage_layers,
                "Layers on the last pipeline stage (--decoder-last-pipeline-num-layers; 0: the even split)")
      ->check(whole_range(0, 100000));
}

}  // namespace

void add_plan_options(CLI::App* p, PlanArgs& a) {
  add_model_options(p, a);
  add_cluster_options(p, a);
  p->add_option("--dp", a.dp, "Data-parallel size")->check(whole_range(1, 10000000))->capture_default_str();
  p->add_option("--tp", a.tp, "Tensor-parallel size")->check(whole_range(1, 10000000))->capture_default_str();
  p->add_option("--pp", a.pp, "Pipeline stages")->check(whole_range(1, 10000000))->capture_default_str();
  p->add_option("--zero", a.zero,
                "ZeRO stage over dp, 0-3 (1: optimizer states sharded, reduce-scatter + all-gather: Megatron's "
                "distributed optimizer)")
      ->check(whole_range(0, 3))
      ->capture_default_str();
  p->add_option("--micro-batch-size", a.micro_batch_size, "Sequences per micro-batch b")
      ->check(whole_range(1, 1000000))
      ->capture_default_str();
  p->add_option("--micro-batches", a.micro_batches, "Micro-batches per step M")
      ->check(whole_range(1, 1000000))
      ->capture_default_str();
  add_schedule_options(p, a);
  p->add_option("--recompute", a.recompute,
                "none, selective (Megatron's: the attention core), full, selective-op (torchtitan's: every other "
                "matmul and the element-wise ops)")
      ->check(CLI::IsMember({"none", "selective", "full", "selective-op"}))
      ->capture_default_str();
  p->add_option("--convention", a.convention, "Bytes per parameter: 16 (2+2+12), 12 (2+2+8), 8 (2+2+4)")
      ->check(CLI::IsMember({"16", "12", "8"}))
      ->capture_default_str();
  p->add_option("--efficiency", a.efficiency, "simulate --compute flat only: achieved share of peak FLOP/s")
      ->check(finite_range(1e-6, 1))
      ->capture_default_str();
  p->add_option("--experts", a.experts,
                "Mixture of experts: every layer's MLP becomes E experts (each the dense MLP) and a router")
      ->check(whole_range(1, 1000000));
  p->add_option("--top-k", a.top_k, "With --experts: experts per token k (default 2)")->check(whole_range(1, 1000000));
  p->add_option("--ep", a.ep, "With --experts: expert-parallel ranks, within dp (dividing dp and E)")
      ->check(whole_range(1, 10000000))
      ->capture_default_str();
  p->add_option(
       "--cp", a.cp,
       "Context-parallel size: each sequence split over cp GPUs (zig-zag, 2·cp dividing --seq), ring attention; "
       "GPUs = dp·tp·pp·cp, ranks tp fastest, then cp, dp, pp")
      ->check(whole_range(1, 10000))
      ->capture_default_str();
  p->add_option("--cp-algo", a.cp_algo,
                "With --cp: ring (K/V hops overlapped with attention blocks), all-gather (Llama 3: K/V gathered, "
                "dK/dV reduce-scattered) or ulysses (all-to-alls to whole heads; heads/tp divisible by cp)")
      ->transform(named_choice(th::kCpAlgoNames))
      ->option_text("ring|all-gather|ulysses")
      ->default_str(th::cp_algo_name(th::CpAlgo::ring));
  add_practice_options(p, a);
}

std::string text_without_result(const Report& rep) {
  std::string text = rep.to_text(terminal_width());
  const auto at = text.rfind("result: ");
  if (at != std::string::npos) text.erase(at);
  return text;
}

}  // namespace dtl::cli
