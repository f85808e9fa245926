// `dtlab plan` and `simulate`'s options for what real runs do (core/theory/practice.h): the
// framework era's defaults, each overridden one by one, and the checks that each one given applies.
#include <string>

#include "core/error.h"
#include "labs/cli/plan_options.h"
#include "labs/cli/validators.h"

namespace dtl::cli {

namespace th = dtl::theory;

void resolve_practice(const CLI::App& p, PlanArgs& a) {
  th::Practice x = th::framework_practice(a.framework);
  auto given = [&](const char* flag) { return p.count(flag) > 0; };
  if (given("--sequence-parallel")) x.sequence_parallel = a.sequence_parallel;
  if (given("--attention")) x.attention = a.attention;
  if (given("--dropout")) x.dropout = a.dropout;
  if (given("--kernels")) x.kernels = a.kernels;
  if (given("--tp-comm")) x.tp_comm = a.tp_comm;
  if (given("--dp-comm")) x.dp_comm = a.dp_comm;
  if (given("--grads")) x.grads = a.grads;
  if (given("--dp-bucket-mb")) x.dp_bucket_bytes = a.dp_bucket_mb * 1e6;
  if (given("--zero3-prefetch")) x.zero3_prefetch = a.zero3_prefetch;
  for (const char* flag : {"--sequence-parallel", "--tp-comm"})
    if (given(flag) && a.tp < 2 && a.search == 0)  // (--search chooses tp itself)
      throw UsageError(std::string(flag) + " acts on tensor parallelism's collectives and split: add --tp N (N > 1)");
  if (given("--dp-bucket-mb") && x.dp_comm == th::CommOverlap::exposed)
    throw UsageError(
        "--dp-bucket-mb sizes the buckets of an overlapped gradient reduction, and this run's is exposed "
        "(--framework " +
        std::string(th::framework_name(a.framework)) + "): add --dp-comm overlapped");
  if (given("--zero3-prefetch") && a.zero != 3 && a.search == 0)
    throw UsageError("--zero3-prefetch is how many layers ZeRO-3 gathers ahead: add --zero 3");
  a.practice = x;
}

void add_practice_options(CLI::App* p, PlanArgs& a) {
  auto choice = [&](const char* flag, auto& field, const auto& names, const char* text, const char* help) {
    p->add_option(flag, field, help)->transform(named_choice(names))->option_text(text);
  };
  choice("--framework", a.framework, th::kFrameworkNames, "megatron-2021|megatron-core|fsdp",
         "The framework era whose defaults the run takes (core/theory/practice.h); default megatron-core");
  choice("--sequence-parallel", a.sequence_parallel, th::kOnOffNames, "on|off",
         "Element-wise work and its activations split over TP ranks (Korthikanti et al. 2022)");
  choice("--attention", a.attention, th::kAttentionNames, "flash|flash2|unfused",
         "flash: fused causal kernel at the profile's flash rate; flash2: FlashAttention-2's rate (SDPA); "
         "unfused: the s×s scores through HBM");
  choice("--dropout", a.dropout, th::kOnOffNames, "on|off",
         "Dropout after attention and MLP and on the attention probabilities");
  choice("--kernels", a.kernels, th::kKernelsNames, "fused|unfused",
         "Element-wise kernels: Megatron's fusions, or each op its own kernel (a pass over HBM and a launch gap)");
  choice("--tp-comm", a.tp_comm, th::kOverlapNames, "exposed|overlapped",
         "TP collectives on the critical path, or under the GEMM beside them (TransformerEngine's userbuffers)");
  choice("--dp-comm", a.dp_comm, th::kOverlapNames, "exposed|overlapped",
         "The gradient reduction after the last backward, or in buckets beside it (DDP, --overlap-grad-reduce)");
  choice("--grads", a.grads, th::kGradNames, "bf16|fp32", "Gradients held and reduced in (Megatron's bf16 runs: fp32)");
  p->add_option("--dp-bucket-mb", a.dp_bucket_mb,
                "With --dp-comm overlapped: bucket size, MB (megatron-core 80, fsdp 26.2)")
      ->check(finite_range(1e-3, 1e6));
  p->add_option("--zero3-prefetch", a.zero3_prefetch,
                "With --zero 3: layers whose parameters are gathered ahead (FSDP 1)")
      ->check(whole_range(0, 64));
}

}  // namespace dtl::cli
