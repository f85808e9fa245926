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
  // A Llama-style model (family llama), grouped-query attention, the MLP's own size (plan.h)
  theory::Family family = theory::Family::gpt;
  int kv_heads = 0, ffn = 0;
  // What the run does (core/theory/practice.h): the framework's defaults, each overridable
  theory::Framework framework = theory::Framework::megatron_core;
  theory::OnOff sequence_parallel = theory::OnOff::on, dropout = theory::OnOff::off;
  theory::AttentionKernel attention = theory::AttentionKernel::flash;
  theory::ElementwiseKernels kernels = theory::ElementwiseKernels::fused;
  theory::CommOverlap tp_comm = theory::CommOverlap::exposed, dp_comm = theory::CommOverlap::overlapped;
  theory::GradPrecision grads = theory::GradPrecision::fp32;
  double dp_bucket_mb = 0;
  int zero3_prefetch = 1;
  theory::Practice practice;  // resolved by resolve_practice() after parsing
  // The pipeline schedule plan and simulate run (--schedule, --chunks: interleaved's v)
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  int chunks = 1;
  int first_stage_layers = 0, last_stage_layers = 0;  // uneven end stages (0: the even split)
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
// The framework's practice (--framework) with each option given on the command line over it; an
// option that cannot act on this layout (--sequence-parallel or --tp-comm without --tp > 1,
// --dp-bucket-mb with --dp-comm exposed, --zero3-prefetch without --zero 3) is a UsageError.
void resolve_practice(const CLI::App& p, PlanArgs& a);
// --framework, --sequence-parallel, --attention, ... (plan_practice_options.cpp)
void add_practice_options(CLI::App* p, PlanArgs& a);
// Report::to_text ends with "result: OK, 0 checks passed": a plan or a simulation checks
// nothing, so that line goes.
std::string text_without_result(const Report& rep);

}  // namespace dtl::cli
