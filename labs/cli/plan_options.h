// The model, cluster and configuration options `dtlab plan` and `dtlab simulate` share, and
// how they become the planner's ModelSpec, ClusterSpec and ParallelConfig (core/theory/plan.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/theory/plan.h"
#include "labs/report.h"

namespace dtl::cli {

struct PlanArgs {
  std::string model, params, cluster = "a100-80gb", gpu_memory;  // model "": 175b unless --params or a shape says
  int layers = 0, hidden = 0, heads = 0, seq = 0, vocab = -1;
  int gpus = 0, gpus_per_node = 0, search = 0, global_batch = 0;
  double intra_bw = 0, inter_bw = 0, intra_us = -1, inter_us = -1, peak_tflops = 0;
  int dp = 1, tp = 1, pp = 1, zero = 0, micro_batch_size = 1, micro_batches = 32;  // M 32: the seeds' bubble examples
  int experts = 0, top_k = 0, ep = 1;  // a mixture of experts; top_k 0: not given (2 with --experts)
  int cp = 1;                          // context parallelism: the sequence over cp GPUs
  theory::CpAlgo cp_algo = theory::CpAlgo::ring;
  std::string recompute = "none", convention = "16";
  double efficiency = 0.5;
  bool json = false;
};

// Registers --model .. --efficiency on `p` (not --search, --global-batch, --json).
void add_plan_options(CLI::App* p, PlanArgs& a);

// The model the options describe: a preset (--model; 175b when nothing else is given),
// --params, or a whole shape (--layers --hidden --heads --seq --vocab, Ψ counted from it).
// --model with a shape it does not have, --params beside a shape, or half a shape is a
// UsageError naming both: the model described is the model computed.
theory::ModelSpec model_from(const PlanArgs& a);
theory::ClusterSpec cluster_from(const PlanArgs& a);
theory::ParallelConfig config_from(const PlanArgs& a);
theory::ZeroConvention parse_convention(const std::string& text);  // throws UsageError
// --cp-algo chooses how --cp's ranks exchange K/V: given without --cp N > 1 it is a UsageError.
void require_cp_options_apply(const CLI::App& p, const PlanArgs& a);
// Report::to_text ends with "result: OK, 0 checks passed": a plan or a simulation checks
// nothing, so that line goes.
std::string text_without_result(const Report& rep);

}  // namespace dtl::cli
