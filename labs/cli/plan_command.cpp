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
#include "labs/cli/plan_goodput.h"
#include "labs/cli/plan_options.h"
#include "labs/cli/validators.h"
#include "labs/report.h"

namespace dtl::cli {

namespace {

namespace th = dtl::theory;

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

// " · first stage 7 layers · last stage 7 layers": the ends set apart (--first/last-stage-layers).
std::string uneven_words(const th::ParallelConfig& p) {
  return (p.first_stage_layers > 0 ? " · first stage " + std::to_string(p.first_stage_layers) + " layers" : "") +
         (p.last_stage_layers > 0 ? " · last stage " + std::to_string(p.last_stage_layers) + " layers" : "");
}

std::string config_words(const th::ParallelConfig& p) {
  return "dp " + std::to_string(p.dp) + " × tp " + std::to_string(p.tp) + " × pp " + std::to_string(p.pp) +
         (p.cp > 1 ? " × cp " + std::to_string(p.cp) + " (" + th::cp_algo_name(p.cp_algo) + ")" : "") + " · ZeRO-" +
         std::to_string(p.zero) + " · recompute " + th::recompute_name(p.recompute) + " · b " +
         std::to_string(p.micro_batch_size) + " × M " + std::to_string(p.micro_batches) +
         (p.schedule != pipeline::ScheduleKind::one_f_one_b ? std::string(" · ") + pipeline::schedule_name(p.schedule)
                                                            : "") +
         (p.chunks > 1 ? " v " + std::to_string(p.chunks) : "") + uneven_words(p);
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
  if (m.params <= 0 && m.has_shape()) {  // counted from the shape: the exact count beside the closed form
    char count[200];
    if (m.family == th::Family::llama)
      std::snprintf(count, sizeof count, "Ψ from the Llama-style shape: %.0f exactly (%d KV heads, ffn %.0f, untied)",
                    m.shape_parameters(), m.kv(), m.ffn_size());
    else
      std::snprintf(count, sizeof count,
                    "Ψ from the shape: %.0f exactly; 12·L·h²·(1 + 13/(12h) + (V+s)/(12·L·h)) = %.0f",
                    m.shape_parameters(), m.shape_parameters_approx());
    rep.setup.push_back(count);
  }
  if (m.experts > 0) {
    std::snprintf(psi, sizeof psi, "active per token: %.4g billion", m.active_parameters() / 1e9);
    rep.setup.push_back(psi);
  }
  if (m.has_shape())
    rep.setup.push_back("L " + std::to_string(m.layers) + ", h " + std::to_string(m.hidden) + ", a " +
                        std::to_string(m.heads) + ", s " + std::to_string(m.seq) + ", V " + std::to_string(m.vocab));
  rep.setup.push_back(std::to_string(pl.cluster.gpus_per_node) + " GPUs/node, " + gb(pl.cluster.gpu_memory) + " each");
  return rep;
}

void add_memory_rows(Report& rep, const th::Plan& pl) {
  const auto& mem = pl.memory;
  const auto& p = pl.config;
  const std::string zero =
      pl.model.experts > 0 ? "dense Ψ/(tp·pp) ZeRO-" + std::to_string(p.zero) + " over dp " + std::to_string(p.dp) +
                                 "; experts /(ep·tp·pp) over dp/ep"
      : p.cp > 1 ? "Ψ/(tp·pp), ZeRO-" + std::to_string(p.zero) + " over dp·cp " + std::to_string(p.dp * p.cp)
                 : "Ψ/(tp·pp), ZeRO-" + std::to_string(p.zero) + " over dp " + std::to_string(p.dp);
  const std::string per_cp = p.cp > 1 ? "/(t·cp)" : "/t";
  rep.add("memory.params", "parameters", mem.params / 1e9, "GB").source = zero;
  rep.add("memory.grads", "gradients", mem.grads / 1e9, "GB").source = zero;
  rep.add("memory.optimizer", "optimizer states", mem.optimizer / 1e9, "GB").source = zero;
  rep.add("memory.model_state", "model state", mem.model_state() / 1e9, "GB").source =
      th::zero_convention_name(p.convention);
  rep.add("memory.model_state_16", "model state under 16 B/param", mem.model_state_sixteen / 1e9, "GB").source =
      "2+2+12";
  rep.add("memory.model_state_12", "model state under 12 B/param", mem.model_state_twelve / 1e9, "GB").source = "2+2+8";
  rep.add("memory.model_state_8", "model state under 8 B/param", mem.model_state_eight / 1e9, "GB").source = "2+2+4";
  if (pl.model.has_shape()) {  // (a model given by Ψ alone has no activations to count)
    rep.add("memory.activations", std::string("activations (recompute ") + th::recompute_name(p.recompute) + ")",
            mem.activations / 1e9, "GB")
        .source = std::string(p.recompute == th::Recompute::selective_op
                                  ? "torchtitan's op policy: input, Q, V, gate, attention out (framework_memory.h); SP "
                                  : "Korthikanti et al. 2022; SP ") +
                  (p.practice.sp() ? "on" : "off") + (p.practice.flash() ? ", flash" : "") +
                  (p.practice.has_dropout() ? ", dropout" : "");
    const std::string terms = p.practice.flash() || !p.practice.has_dropout() ? "Korthikanti's tensors, as run" : "";
    rep.add("memory.activations_none", "activations, no recomputation", mem.activations_none / 1e9, "GB").source =
        terms.empty() ? "s·b·h(34+5as/h)" + per_cp : terms;
    rep.add("memory.activations_selective", "activations, selective recomputation", mem.activations_selective / 1e9,
            "GB")
        .source = terms.empty() ? "34·s·b·h" + per_cp : terms;
    rep.add("memory.activations_full", "activations, full recomputation", mem.activations_full / 1e9, "GB").source =
        "2·s·b·h" + (p.practice.sp() ? per_cp : std::string(p.cp > 1 ? "/cp" : ""));
  }
  for (const th::MemoryLine& l : mem.framework)  // what frameworks hold beyond the two (framework_memory.h)
    rep.add(l.id, l.label + (l.counted ? "" : " (not this GPU)"), l.bytes / 1e9, "GB").source = l.source;
  rep.add("memory.total", "total per GPU", mem.total() / 1e9, "GB");
  rep.add("memory.capacity", "GPU memory", mem.capacity / 1e9, "GB");
  rep.add("memory.headroom", mem.fits() ? "fits, to spare" : "does NOT fit, misses by", std::fabs(mem.headroom()) / 1e9,
          "GB");
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
    rep.add(id, std::string(th::axis_name(e.axis)) + " " + e.collective + " ×" + std::to_string(e.calls), e.bytes / 1e9,
            "GB")
        .source = share;
    total += e.bytes;
  }
  rep.add("traffic.total", "sent per GPU per step", total / 1e9, "GB");
}

// Ring attention's hop against the block it hides behind (core/theory/context_parallel.h).
void add_cp_time_rows(Report& rep, const th::Plan& pl) {
  const th::CpRing& r = pl.cp_ring;
  rep.add("time.cp_hop", "CP ring: one K/V hop", r.hop_s, "s").source = "α + 2·(b·s/cp)·(h/tp)·2 B / β";
  rep.add("time.cp_block", "CP ring: one block's attention, forward", r.block_forward_s, "s").source =
      "its GEMMs from their shapes (kernel_time.h)";
  rep.add("time.cp", "exposed CP ring hops", pl.time.cp, "s").source =
      "max(0, hop − block) per hop, + the last dK/dV hop";
}

void add_time_rows(Report& rep, const th::Plan& pl) {
  const auto& t = pl.time;
  rep.add("time.bubble_fraction", "pipeline bubble", 100 * pl.bubble, "%").source = pl.bubble_formula;
  rep.add("time.busy", "compute (busy)", t.busy, "s").source = "GEMMs and kernels from their shapes, achieved rates";
  rep.add("time.bubble", "bubble and PP sends", t.bubble, "s").source =
      std::string(pipeline::schedule_name(pl.config.schedule)) + " simulated (step_model.h)";
  rep.add("time.tp", "exposed TP communication", t.tp, "s").source = "NCCL's model";
  rep.add("time.dp", "exposed DP communication", t.dp, "s").source =
      std::string("NCCL's model, ") + (pl.config.zero >= 2 ? "ZeRO-2/3: per micro-batch"
                                       : pl.config.practice.dp_comm == th::CommOverlap::overlapped
                                           ? "buckets beside backward"
                                           : "after backward");
  rep.add("time.optimizer", "optimizer step", t.optimizer, "s").source = "AdamW bytes / achieved HBM bandwidth";
  if (pl.model.experts > 0) rep.add("time.ep", "exposed EP all-to-alls", t.ep, "s").source = "α-β, balanced load";
  if (pl.config.cp > 1 && pl.config.cp_algo == th::CpAlgo::ring) add_cp_time_rows(rep, pl);
  if (pl.config.cp > 1 && pl.config.cp_algo != th::CpAlgo::ring)
    rep.add("time.cp", std::string("exposed CP ") + th::cp_algo_name(pl.config.cp_algo) + " collectives", t.cp, "s")
        .source = "α-β, none hidden";
  rep.add("time.step", "step time", t.total(), "s");
  rep.add("time.tokens_per_step", "tokens per step", pl.tokens_per_step, "");
  rep.add("time.tokens_per_s", "tokens/s", pl.tokens_per_s, "tokens/s");
  rep.add("time.mfu", "MFU", 100 * pl.mfu, "%").source = "6Ψ + 12·L·h·s per token";
  rep.add("time.hfu", "HFU", 100 * pl.hfu, "%").source = "+ recomputation";
}

Report plan_report(const th::Plan& pl) {
  Report rep = header(pl);
  rep.setup.push_back(config_words(pl.config));
  rep.setup.push_back("practice: " + th::practice_words(pl.config.practice));
  rep.config = {{"dp", pl.config.dp},
                {"tp", pl.config.tp},
                {"pp", pl.config.pp},
                {"cp", pl.config.cp},
                {"zero", pl.config.zero},
                {"micro_batch_size", pl.config.micro_batch_size},
                {"micro_batches", pl.config.micro_batches},
                {"recompute", th::recompute_name(pl.config.recompute)},
                {"psi", pl.psi},
                {"fits", pl.memory.fits()}};
  nlohmann::json ledger = nlohmann::json::array();
  for (const auto& e : pl.ledger)
    ledger.push_back({{"axis", th::axis_name(e.axis)},
                      {"collective", e.collective},
                      {"calls", e.calls},
                      {"bytes", e.bytes},
                      {"intra_bytes", e.intra_bytes},
                      {"inter_bytes", e.inter_bytes},
                      {"share", e.share},
                      {"crosses_nodes", e.crosses_nodes},
                      {"time_s", e.time_s}});
  rep.config["ledger"] = ledger;
  if (pl.config.cp > 1) {
    rep.config["rank_order"] = "rank = pp_rank·(dp·cp·tp) + dp_rank·(cp·tp) + cp_rank·tp + tp_rank";
    rep.setup.push_back("ranks: tp fastest, then cp, dp, pp (Megatron-LM's order): a cp ring's ranks are tp apart");
  }
  add_memory_rows(rep, pl);
  add_traffic_rows(rep, pl);
  if (pl.model.has_shape()) add_time_rows(rep, pl);
  rep.notes = pl.formulas;
  return rep;
}

Report search_report(const th::ModelSpec& m, const th::ClusterSpec& c, int gpus, const th::SearchOptions& o) {
  th::SearchRejections why;
  const auto ranked = th::search(m, c, gpus, o, &why);
  th::Plan first;
  if (!ranked.empty())
    first = ranked.front().plan;
  else
    first.model = m, first.cluster = c, first.cluster.gpus = gpus, first.psi = m.parameters();
  Report rep = header(first);
  rep.setup.push_back("search: every dp·tp·pp = " + std::to_string(gpus) + " that fits, fastest first");
  rep.setup.push_back("practice: " + th::practice_words(o.practice));
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
  if (ranked.empty())
    rep.notes.push_back("no configuration fits: " + why.words(gpus, th::search_global_batch(o, gpus)));
  else
    rep.notes = ranked.front().plan.formulas;
  return rep;
}

// --search chooses the configuration itself: options that set one are refused beside it,
// and --global-batch means something only to it.
void require_search_options_apply(const CLI::App& p, bool search) {
  if (!search) {
    if (p.count("--global-batch"))
      throw UsageError("--global-batch sizes the step of --search's configurations: add --search N");
    return;
  }
  for (const char* flag : {"--dp", "--tp", "--pp", "--zero", "--gpus", "--micro-batches", "--recompute", "--experts",
                           "--ep", "--schedule", "--chunks", "--first-stage-layers", "--last-stage-layers"})
    if (p.count(flag))
      throw UsageError(std::string(flag) + " sets what --search chooses itself (dp·tp·pp = N, ZeRO, recomputation, " +
                       "the micro-batches from --global-batch; it plans dense models only): drop it, or drop --search "
                       "to plan that configuration");
  if (p.count("--cp") || p.count("--cp-algo"))
    throw UsageError(std::string(p.count("--cp") ? "--cp" : "--cp-algo") +
                     ": --search ranks dp·tp·pp = N without "
                     "context parallelism (cp 1); drop --search to plan a cp configuration (--dp --tp --pp --cp)");
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto g = std::make_shared<GoodputArgs>();
  CLI::App* p = app.add_subcommand("plan", "Plan a 3D (dp×tp×pp) run on a cluster: memory, traffic, bubble, step time");
  add_plan_options(p, *a);
  p->add_option("--search", a->search, "Rank every configuration of N GPUs that fits (it chooses dp, tp, pp and ZeRO)")
      ->check(whole_range(1, 10000000));
  p->add_option("--global-batch", a->global_batch, "With --search: sequences per step (default max(512, 2N))")
      ->check(whole_range(1, 100000000));
  p->add_flag("--json", a->json, "Print the report as JSON");
  add_goodput_options(p, *g);
  return [a, g, p] {
    if (p->count("--efficiency"))  // one model under plan and simulate (issue 45): no flat share of peak
      throw UsageError(
          "--efficiency is simulate's --compute flat only: plan times every GEMM and kernel from its shape "
          "on the GPU's achieved rates (give --peak-tflops to scale them)");
    require_search_options_apply(*p, a->search > 0);
    require_cp_options_apply(*p, *a);
    require_goodput_options_apply(*p, *g, a->search > 0);
    resolve_practice(*p, *a);
    const th::ModelSpec m = model_from(*a);
    th::ClusterSpec c = cluster_from(*a);
    Report rep;
    if (a->search) {
      th::SearchOptions o;
      o.global_batch = a->global_batch;
      o.micro_batch_size = a->micro_batch_size;
      o.convention = parse_convention(a->convention);
      o.efficiency = a->efficiency;
      o.practice = a->practice;
      rep = search_report(m, c, a->search, o);
    } else {
      const th::Plan pl = th::plan(m, c, config_from(*a));
      rep = plan_report(pl);
      if (g->mtbf_hours > 0) add_goodput_rows(rep, pl, *g);
    }
    if (a->json)
      std::cout << rep.to_json().dump(2) << "\n";
    else
      std::cout << text_without_result(rep);
    return 0;
  };
}

}  // namespace dtl::cli
