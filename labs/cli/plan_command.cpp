// `dtlab plan`: the arithmetic of a 3D configuration for a cluster too large to run here
// (core/theory/plan.h), printed as a lab report.
//
//   dtlab plan --model 175b --cluster a100-80gb --gpus 256 --dp 8 --tp 8 --pp 4 --zero 2 --convention 12
//   dtlab plan --model 70b --cluster h100-80gb --search 128
//   dtlab plan --params 13e9 --layers 40 --hidden 5120 --heads 40 --seq 4096 --dp 8 --zero 3 --json
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/theory/plan.h"
#include "labs/cli/commands.h"
#include "labs/cli/validators.h"
#include "labs/report.h"

namespace dtl::cli {

namespace {

namespace th = dtl::theory;

struct PlanArgs {
  std::string model = "175b", params, cluster = "a100-80gb", gpu_memory;
  int layers = 0, hidden = 0, heads = 0, seq = 0, vocab = -1;
  int gpus = 0, gpus_per_node = 0, search = 0, global_batch = 0;
  double intra_bw = 0, inter_bw = 0, intra_us = -1, inter_us = -1, peak_tflops = 0;
  int dp = 1, tp = 1, pp = 1, zero = 0, micro_batch_size = 1, micro_batches = 32;  // M 32: the seeds' bubble examples
  std::string recompute = "none", convention = "16";
  double efficiency = 0.5;
  bool json = false;
};

// "175e9", "175B", "1.2T", "13G": a count with an optional K/M/G/B/T suffix (powers of 1000).
double parse_count(const std::string& text, const char* what, bool bytes) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string rest = used ? text.substr(used) : text;
  if (bytes && !rest.empty() && (rest.back() == 'B' || rest.back() == 'b') && rest.size() > 1) rest.pop_back();
  double scale = 1;
  if (rest == "K" || rest == "k") scale = 1e3;
  else if (rest == "M") scale = 1e6;
  else if (rest == "G" || (!bytes && rest == "B")) scale = 1e9;
  else if (rest == "T") scale = 1e12;
  else if (!rest.empty()) used = 0;
  if (used == 0 || !std::isfinite(v) || v <= 0)
    throw UsageError(std::string(what) + " '" + text + "' is not a positive number (suffixes K, M, G, T: powers of 1000)");
  return v * scale;
}

th::ZeroConvention parse_convention(const std::string& text) {
  if (text == "16") return th::ZeroConvention::sixteen;
  if (text == "12") return th::ZeroConvention::twelve;
  if (text == "8") return th::ZeroConvention::eight;
  throw UsageError("--convention is 16, 12 or 8 bytes per parameter, not '" + text + "'");
}

// A preset's UsageError with the option it came from in front ("--model: unknown model ...").
template <class F>
auto with_option(const char* option, F&& f) {
  try {
    return f();
  } catch (const UsageError& e) {
    throw UsageError(std::string(option) + ": " + e.what());
  }
}

th::ModelSpec model_from(const PlanArgs& a) {
  th::ModelSpec m;
  if (a.params.empty()) m = with_option("--model", [&] { return th::model_preset(a.model); });
  else m.params = parse_count(a.params, "--params", false);
  if (a.layers) m.layers = a.layers;
  if (a.hidden) m.hidden = a.hidden;
  if (a.heads) m.heads = a.heads;
  if (a.seq) m.seq = a.seq;
  if (a.vocab >= 0) m.vocab = a.vocab;
  return m;
}

th::ClusterSpec cluster_from(const PlanArgs& a) {
  th::ClusterSpec c = with_option("--cluster", [&] { return th::cluster_preset(a.cluster); });
  c.gpus = a.gpus ? a.gpus : a.dp * a.tp * a.pp;
  if (a.gpus_per_node) c.gpus_per_node = a.gpus_per_node;
  if (!a.gpu_memory.empty()) c.gpu_memory = parse_count(a.gpu_memory, "--gpu-memory", true);
  if (a.intra_bw > 0) c.intra.beta_Bps = a.intra_bw * 1e9;
  if (a.inter_bw > 0) c.inter.beta_Bps = a.inter_bw * 1e9;
  if (a.intra_us >= 0) c.intra.alpha_s = a.intra_us * 1e-6;
  if (a.inter_us >= 0) c.inter.alpha_s = a.inter_us * 1e-6;
  if (a.peak_tflops > 0) c.peak_flops = a.peak_tflops * 1e12;
  return c;
}

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

std::string config_words(const th::ParallelConfig& p) {
  return "dp " + std::to_string(p.dp) + " × tp " + std::to_string(p.tp) + " × pp " + std::to_string(p.pp) + " · ZeRO-" +
         std::to_string(p.zero) + " · recompute " + th::recompute_name(p.recompute) + " · b " +
         std::to_string(p.micro_batch_size) + " × M " + std::to_string(p.micro_batches);
}

Report header(const th::Plan& pl) {
  Report rep;
  rep.lab = "plan";
  rep.backend = pl.cluster.name;
  rep.ranks = pl.cluster.gpus;
  rep.title = "plan · " + std::to_string(pl.cluster.gpus) + " GPUs (" + pl.cluster.name + ")";
  rep.value_title = "estimate";  // nothing runs: every figure is the formulas'
  const auto& m = pl.model;
  char psi[64];
  std::snprintf(psi, sizeof psi, "Ψ = %.4g billion parameters", pl.psi / 1e9);
  rep.setup = {"model " + m.name, psi};
  if (m.has_shape())
    rep.setup.push_back("L " + std::to_string(m.layers) + ", h " + std::to_string(m.hidden) + ", a " +
                        std::to_string(m.heads) + ", s " + std::to_string(m.seq) + ", V " + std::to_string(m.vocab));
  rep.setup.push_back(std::to_string(pl.cluster.gpus_per_node) + " GPUs/node, " + gb(pl.cluster.gpu_memory) + " each");
  return rep;
}

void add_memory_rows(Report& rep, const th::Plan& pl) {
  const auto& mem = pl.memory;
  const auto& p = pl.config;
  const std::string zero = "Ψ/(tp·pp), ZeRO-" + std::to_string(p.zero) + " over dp " + std::to_string(p.dp);
  rep.add("memory.params", "parameters", mem.params / 1e9, "GB").source = zero;
  rep.add("memory.grads", "gradients", mem.grads / 1e9, "GB").source = zero;
  rep.add("memory.optimizer", "optimizer states", mem.optimizer / 1e9, "GB").source = zero;
  rep.add("memory.model_state", "model state", mem.model_state() / 1e9, "GB").source = th::zero_convention_name(p.convention);
  rep.add("memory.model_state_16", "model state under 16 B/param", mem.model_state_sixteen / 1e9, "GB").source = "2+2+12";
  rep.add("memory.model_state_12", "model state under 12 B/param", mem.model_state_twelve / 1e9, "GB").source = "2+2+8";
  rep.add("memory.model_state_8", "model state under 8 B/param", mem.model_state_eight / 1e9, "GB").source = "2+2+4";
  if (pl.model.has_shape()) {  // (a model given by Ψ alone has no activations to count)
    rep.add("memory.activations", std::string("activations (recompute ") + th::recompute_name(p.recompute) + ")",
            mem.activations / 1e9, "GB").source = "Korthikanti et al. 2022";
    rep.add("memory.activations_none", "activations, no recomputation", mem.activations_none / 1e9, "GB").source =
        "s·b·h(34+5as/h)/t";
    rep.add("memory.activations_selective", "activations, selective recomputation", mem.activations_selective / 1e9,
            "GB").source = "34·s·b·h/t";
    rep.add("memory.activations_full", "activations, full recomputation", mem.activations_full / 1e9, "GB").source =
        "2·s·b·h/t";
  }
  rep.add("memory.total", "total per GPU", mem.total() / 1e9, "GB");
  rep.add("memory.capacity", "GPU memory", mem.capacity / 1e9, "GB");
  rep.add("memory.headroom", mem.fits() ? "fits, to spare" : "does NOT fit, misses by", std::fabs(mem.headroom()) / 1e9, "GB");
}

void add_traffic_rows(Report& rep, const th::Plan& pl) {
  double total = 0;
  for (const auto& e : pl.ledger) {
    std::string id = e.collective.substr(0, e.collective.find(' '));
    id = std::string("traffic.") + th::axis_name(e.axis) + "_" + id + "_" + std::to_string(&e - pl.ledger.data());
    char share[96];
    const std::string where = e.inter_bytes == 0   ? "intra-node"
                              : e.intra_bytes == 0 ? "inter-node"
                                                   : "inter-node " + gb(e.inter_bytes);
    std::snprintf(share, sizeof share, "%.1f %% · %s", 100 * e.share, where.c_str());
    rep.add(id, std::string(th::axis_name(e.axis)) + " " + e.collective + " ×" + std::to_string(e.calls), e.bytes / 1e9, "GB")
        .source = share;
    total += e.bytes;
  }
  rep.add("traffic.total", "sent per GPU per step", total / 1e9, "GB");
}

void add_time_rows(Report& rep, const th::Plan& pl) {
  const auto& t = pl.time;
  rep.add("time.bubble_fraction", "pipeline bubble", 100 * pl.bubble, "%").source = "(p−1)/(M+p−1)";
  rep.add("time.busy", "compute (busy)", t.busy, "s").source = "hardware FLOPs / (peak·efficiency)";
  rep.add("time.bubble", "bubble", t.bubble, "s");
  rep.add("time.tp", "exposed TP communication", t.tp, "s").source = "α-β";
  rep.add("time.pp", "exposed PP communication", t.pp, "s").source = "α-β";
  rep.add("time.dp", "exposed DP communication", t.dp, "s").source = "α-β, no overlap";
  rep.add("time.step", "step time", t.total(), "s");
  rep.add("time.tokens_per_step", "tokens per step", pl.tokens_per_step, "");
  rep.add("time.tokens_per_s", "tokens/s", pl.tokens_per_s, "tokens/s");
  rep.add("time.mfu", "MFU", 100 * pl.mfu, "%").source = "6Ψ + 12·L·h·s per token";
  rep.add("time.hfu", "HFU", 100 * pl.hfu, "%").source = "+ recomputation";
}

Report plan_report(const th::Plan& pl) {
  Report rep = header(pl);
  rep.setup.push_back(config_words(pl.config));
  rep.config = {{"dp", pl.config.dp},   {"tp", pl.config.tp}, {"pp", pl.config.pp}, {"zero", pl.config.zero},
                {"micro_batch_size", pl.config.micro_batch_size}, {"micro_batches", pl.config.micro_batches},
                {"recompute", th::recompute_name(pl.config.recompute)}, {"psi", pl.psi},
                {"fits", pl.memory.fits()}};
  nlohmann::json ledger = nlohmann::json::array();
  for (const auto& e : pl.ledger)
    ledger.push_back({{"axis", th::axis_name(e.axis)}, {"collective", e.collective}, {"calls", e.calls},
                      {"bytes", e.bytes}, {"intra_bytes", e.intra_bytes}, {"inter_bytes", e.inter_bytes},
                      {"share", e.share}, {"crosses_nodes", e.crosses_nodes}, {"time_s", e.time_s}});
  rep.config["ledger"] = ledger;
  add_memory_rows(rep, pl);
  add_traffic_rows(rep, pl);
  if (pl.model.has_shape()) add_time_rows(rep, pl);
  rep.notes = pl.formulas;
  return rep;
}

Report search_report(const th::ModelSpec& m, const th::ClusterSpec& c, int gpus, const th::SearchOptions& o) {
  const auto ranked = th::search(m, c, gpus, o);
  th::Plan first;
  if (!ranked.empty()) first = ranked.front().plan;
  else first.model = m, first.cluster = c, first.cluster.gpus = gpus, first.psi = m.parameters();
  Report rep = header(first);
  rep.setup.push_back("search: every dp·tp·pp = " + std::to_string(gpus) + " that fits, fastest first");
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const th::Plan& pl = ranked[i].plan;
    const std::string id = "top" + std::to_string(i + 1);
    rep.add(id + ".tokens_per_s", config_words(pl.config), pl.tokens_per_s, "tokens/s").source =
        i == 0 ? "fastest" : "slower: " + ranked[i].loses_because;
    rep.add(id + ".step", "step time", pl.time.total(), "s");
    rep.add(id + ".memory", "memory per GPU", pl.memory.total() / 1e9, "GB");
    rep.add(id + ".bubble", "bubble", 100 * pl.bubble, "%");
    rep.add(id + ".mfu", "MFU", 100 * pl.mfu, "%");
  }
  if (ranked.empty()) rep.notes.push_back("no configuration fits: add GPUs, or memory per GPU");
  else rep.notes = ranked.front().plan.formulas;
  return rep;
}

// Report::to_text ends with "result: OK, 0 checks passed": a plan checks nothing, so that line goes.
std::string text_without_result(const Report& rep) {
  std::string text = rep.to_text();
  const auto at = text.rfind("result: ");
  if (at != std::string::npos) text.erase(at);
  return text;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* p = app.add_subcommand("plan", "Plan a 3D (dp×tp×pp) run on a cluster: memory, traffic, bubble, step time");
  p->add_option("--model", a->model, "Preset: 7b 13b 70b 175b 1t")->capture_default_str();
  p->add_option("--params", a->params, "Parameters instead of a preset (175e9, 175B, 1.2T)");
  p->add_option("--layers", a->layers, "Transformer layers L")->check(whole_range(1, 100000));
  p->add_option("--hidden", a->hidden, "Hidden size h")->check(whole_range(1, 10000000));
  p->add_option("--heads", a->heads, "Attention heads a")->check(whole_range(1, 100000));
  p->add_option("--seq", a->seq, "Sequence length s")->check(whole_range(1, 100000000));
  p->add_option("--vocab", a->vocab, "Vocabulary V")->check(whole_range(0, 100000000));
  p->add_option("--cluster", a->cluster, "Preset: a100-80gb h100-80gb")->capture_default_str();
  p->add_option("--gpus", a->gpus, "GPUs N (default dp·tp·pp)")->check(whole_range(1, 10000000));
  p->add_option("--gpus-per-node", a->gpus_per_node, "GPUs per node (preset: 8)")->check(whole_range(1, 1024));
  p->add_option("--gpu-memory", a->gpu_memory, "Memory per GPU (80G = 80e9 bytes, as the curriculum's 80 GB)");
  p->add_option("--intra-bw", a->intra_bw, "Intra-node bandwidth per GPU, GB/s")->check(finite_range(1e-6, 1e9));
  p->add_option("--inter-bw", a->inter_bw, "Inter-node bandwidth per GPU, GB/s")->check(finite_range(1e-6, 1e9));
  p->add_option("--intra-latency", a->intra_us, "Intra-node latency α, µs")->check(finite_range(0, 1e9));
  p->add_option("--inter-latency", a->inter_us, "Inter-node latency α, µs")->check(finite_range(0, 1e9));
  p->add_option("--peak-tflops", a->peak_tflops, "Peak TFLOP/s per GPU")->check(finite_range(1e-6, 1e9));
  p->add_option("--dp", a->dp, "Data-parallel size")->check(whole_range(1, 10000000))->capture_default_str();
  p->add_option("--tp", a->tp, "Tensor-parallel size")->check(whole_range(1, 10000000))->capture_default_str();
  p->add_option("--pp", a->pp, "Pipeline stages")->check(whole_range(1, 10000000))->capture_default_str();
  p->add_option("--zero", a->zero, "ZeRO stage over dp, 0-3")->check(whole_range(0, 3))->capture_default_str();
  p->add_option("--micro-batch-size", a->micro_batch_size, "Sequences per micro-batch b")
      ->check(whole_range(1, 1000000))->capture_default_str();
  p->add_option("--micro-batches", a->micro_batches, "Micro-batches per step M")
      ->check(whole_range(1, 1000000))->capture_default_str();
  p->add_option("--recompute", a->recompute, "none, selective, full")
      ->check(CLI::IsMember({"none", "selective", "full"}))->capture_default_str();
  p->add_option("--convention", a->convention, "Bytes per parameter: 16 (2+2+12), 12 (2+2+8), 8 (2+2+4)")
      ->check(CLI::IsMember({"16", "12", "8"}))->capture_default_str();
  p->add_option("--efficiency", a->efficiency, "Achieved share of peak FLOP/s")->check(finite_range(1e-6, 1))
      ->capture_default_str();
  p->add_option("--search", a->search, "Rank every configuration of N GPUs that fits (ignores --dp --tp --pp --zero)")
      ->check(whole_range(1, 10000000));
  p->add_option("--global-batch", a->global_batch, "With --search: sequences per step (default max(512, 2N))")
      ->check(whole_range(1, 100000000));
  p->add_flag("--json", a->json, "Print the report as JSON");
  return [a] {
    const th::ModelSpec m = model_from(*a);
    th::ClusterSpec c = cluster_from(*a);
    Report rep;
    if (a->search) {
      th::SearchOptions o;
      o.global_batch = a->global_batch;
      o.micro_batch_size = a->micro_batch_size;
      o.convention = parse_convention(a->convention);
      o.efficiency = a->efficiency;
      rep = search_report(m, c, a->search, o);
    } else {
      th::ParallelConfig cfg{a->dp, a->tp, a->pp, a->zero, a->micro_batch_size, a->micro_batches,
                             th::parse_recompute(a->recompute), parse_convention(a->convention), a->efficiency};
      rep = plan_report(th::plan(m, c, cfg));
    }
    if (a->json) std::cout << rep.to_json().dump(2) << "\n";
    else std::cout << text_without_result(rep);
    return 0;
  };
}

}  // namespace dtl::cli
