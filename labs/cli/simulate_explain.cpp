// The step explained (simulate_explain.h).
#include "labs/cli/simulate_explain.h"

#include <cstdio>
#include <sstream>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/theory/step_model.h"

namespace dtl::cli {

namespace th = dtl::theory;

PlanArgs versus_args(const PlanArgs& base, const std::string& text) {
  PlanArgs a = base;
  std::istringstream in(text);
  for (std::string pair; std::getline(in, pair, ',');) {
    const auto eq = pair.find('=');
    const std::string key = pair.substr(0, eq), value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    int* field = key == "dp"                 ? &a.dp
                 : key == "tp"               ? &a.tp
                 : key == "pp"               ? &a.pp
                 : key == "cp"               ? &a.cp
                 : key == "ep"               ? &a.ep
                 : key == "zero"             ? &a.zero
                 : key == "micro-batches"    ? &a.micro_batches
                 : key == "micro-batch-size" ? &a.micro_batch_size
                                             : nullptr;
    if (key == "recompute" && !value.empty()) {
      a.recompute = value;
      continue;
    }
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(value, &used);
    } catch (const std::exception&) { used = 0; }
    if (!field || used == 0 || used != value.size() || v < 0)
      throw UsageError("--versus '" + pair +
                       "': give key=value pairs, keys dp tp pp cp ep zero micro-batches "
                       "micro-batch-size recompute (e.g. --versus dp=128,tp=4,pp=32)");
    *field = v;
  }
  return a;
}

namespace {

std::string layout_id(const th::Plan& p) {
  const auto& c = p.config;
  return "dp" + std::to_string(c.dp) + "-tp" + std::to_string(c.tp) + "-pp" + std::to_string(c.pp) +
         (c.cp > 1 ? "-cp" + std::to_string(c.cp) : "") + "-M" + std::to_string(c.micro_batches);
}

void add_rows(Report& rep, const std::string& id, const th::Plan& p) {
  const th::StepBreakdown b = th::explain_step(p);
  const std::vector<std::tuple<const char*, const char*, double>> rows = {
      {"gemm", "GEMMs at the achieved cuBLAS rate", b.gemm},
      {"attention", p.config.practice.flash() ? "attention (flash)" : "attention (unfused GEMMs)", b.attention},
      {"memory", "memory-bound kernels", b.memory},
      {"gaps", "launch gaps between kernels", b.gaps},
      {"lm_head", "LM head and loss", b.lm_head},
      {"tp", "TP exposed", b.tp},
      {"cp", "CP exposed", b.cp},
      {"ep", "EP all-to-alls", b.ep},
      {"bubble", "PP bubble (and sends)", b.bubble},
      {"dp", "DP exposed", b.dp},
      {"optimizer", "optimizer step", b.optimizer},
      {"step", "step", b.total()},
  };
  for (const auto& [metric, label, seconds] : rows) rep.add(id + "." + metric, label, seconds, "s");
}

}  // namespace

Report explain_report(const th::Plan& a, double simulated_a, const th::Plan* b) {
  Report rep;
  rep.lab = "simulate";
  rep.backend = a.cluster.name;
  rep.ranks = a.cluster.gpus;
  rep.title = "simulate --explain · " + std::to_string(a.cluster.gpus) + " GPUs (" + a.cluster.name + ")";
  rep.value_title = "seconds";
  std::string first = layout_id(a), second = b ? layout_id(*b) : "";
  if (b && second == first) second += "-b";
  rep.setup = {"model " + a.model.name, "practice: " + th::practice_words(a.config.practice),
               "the stage that ends last (stage " + std::to_string(a.time.stage) + " of " + first + ")"};
  add_rows(rep, first, a);
  if (b) {
    add_rows(rep, second, *b);
    rep.columns = {first, second};
  }
  char agree[160];
  std::snprintf(agree, sizeof agree, "simulate's step of %s: %.6g s (the rows add up to plan's step, the same model)",
                first.c_str(), simulated_a);
  rep.notes = {
      agree,
      "GEMMs, attention and memory-bound kernels are each without their launch gaps, counted apart; TP, CP, EP "
      "and DP are what the schedule leaves exposed; the bubble is the stage's wait for the others and their sends."};
  return rep;
}

}  // namespace dtl::cli
