// The ZeRO lab: stages 1, 2, 3 end with the weights of stage 0 and of one rank on the
// global batch (N = 2, 3, 4, 8, uneven shards included); model-state memory equals the
// formula up to the padding; the bytes on the wire equal the prediction exactly, counted
// here again from the trace's collective events; stage 2 never holds the whole gradient
// buffer and stage 3 never the whole model; bad options are usage errors.
#include "labs/zero/zero_lab.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "core/theory/zero.h"
#include "core/trace/trace.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {

Report run_zero(int P, std::map<std::string, std::string> options, Trace& trace) {
  return test::run_for_results("zero", P, std::move(options), trace);
}

using test::row;

// Ψ of the lab's MLP: in 64 → width → ... → out 64, `depth` linear layers with biases.
double params_of(int width, int depth) {
  double psi = 0;
  for (int l = 0; l < depth; ++l) {
    const double in = l == 0 ? 64 : width, out = l == depth - 1 ? 64 : width;
    psi += in * out + out;
  }
  return psi;
}

}  // namespace

TEST(ZeroLab, EveryStageEqualsStageZeroAndOneRankOnUnevenShards) {
  // Width 37: no layer divides evenly over 3, 4 or 8 ranks, so every unit is padded.
  for (int P : {2, 3, 4, 8}) {
    Trace trace(P);
    const Report rep =
        run_zero(P, {{"precision", "fp32"}, {"width", "37"}, {"depth", "3"}, {"batch", std::to_string(3 * 8)}}, trace);
    EXPECT_TRUE(rep.ok) << "P=" << P << "\n" << rep.to_text();
    for (int stage : {1, 2, 3}) {
      const std::string n = "zero" + std::to_string(stage) + ".";
      const double vs_one = row(rep, n + "weight_diff_vs_one_rank"), vs_ddp = row(rep, n + "weight_diff_vs_stage0");
      std::printf("P=%d stage %d: max |w - 1 rank| %.3g, max |w - stage 0| %.3g\n", P, stage, vs_one, vs_ddp);
      EXPECT_LT(vs_one, 1e-5) << n << " P=" << P;
      EXPECT_LT(vs_ddp, 1e-5) << n << " P=" << P;
      EXPECT_LT(row(rep, n + "loss_last"), row(rep, n + "loss_first")) << n << ": the loss must go down";
    }
    if (P > 2) { EXPECT_GT(row(rep, "zero3.padding"), 0) << "width 37 must pad over " << P << " ranks"; }
  }
}

TEST(ZeroLab, UnitsOfSeveralLayersShardAndGatherAsOne) {
  // --unit 2 and 3 over 5 layers: the last unit is shorter; stage 3 gathers a unit before
  // its first layer's forward and frees it after its last.
  for (const char* unit : {"2", "3"}) {
    Trace trace(3);
    const Report rep =
        run_zero(3, {{"precision", "fp32"}, {"width", "37"}, {"depth", "5"}, {"batch", "12"}, {"unit", unit}}, trace);
    EXPECT_TRUE(rep.ok) << "--unit " << unit << "\n" << rep.to_text();
    for (int stage : {1, 2, 3}) {
      const double d = row(rep, "zero" + std::to_string(stage) + ".weight_diff_vs_stage0");
      std::printf("--unit %s stage %d: max |w - stage 0| %.3g\n", unit, stage, d);
      EXPECT_LT(d, 1e-5);
    }
  }
}

TEST(ZeroLab, MixedPrecisionMatchesOneRankAndStaysNearFp32) {
  for (const char* precision : {"bf16", "fp16"}) {
    Trace trace(3);
    const Report rep = run_zero(3, {{"precision", precision}, {"width", "40"}, {"depth", "4"}, {"batch", "24"}}, trace);
    EXPECT_TRUE(rep.ok) << precision << "\n" << rep.to_text();
    for (int stage : {0, 1, 2, 3}) {
      const std::string n = "zero" + std::to_string(stage) + ".";
      std::printf("%s stage %d: max |w - 1 rank| %.3g, max |w - fp32| %.3g\n", precision, stage,
                  row(rep, n + "weight_diff_vs_one_rank"), row(rep, n + "weight_diff_vs_fp32"));
      // 2·lr per step (lr 1e-3, 3 steps) bounds a sign flip of AdamW's update on a near-zero gradient.
      EXPECT_LE(row(rep, n + "weight_diff_vs_fp32"), 2e-3 * 3) << n << precision;
    }
  }
}

// Issue 31 (14): 64 bf16 ranks round their reduction 63 times; the gradient check's bound
// follows N ((N+2)·2^-8, labs/measure.h), where a fixed 2^-6 failed from 48 ranks on.
// The measured difference stays far below it, and above what one rank could show.
TEST(ZeroLab, TheSixteenBitGradientBoundFollowsTheRankCount) {
  Trace trace(64);
  const Report rep = run_zero(64, {{"stage", "3"}, {"width", "1"}, {"depth", "1"}, {"batch", "64"}}, trace);
  EXPECT_TRUE(rep.ok) << rep.to_text();
  const ReportRow* r = rep.find("zero3.grad_diff_vs_one_rank");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->tolerance.has_value());
  EXPECT_NEAR(*r->tolerance, 66.0 / 256, 1e-12);
  std::printf("64 bf16 ranks: gradient diff %.4g (bound %.4g)\n", r->measured, *r->tolerance);
  EXPECT_GT(r->measured, 1.0 / 64) << "the old fixed bound would have held: this run shows nothing";
}

TEST(ZeroLab, ModelStateIsTheFormulaUpToPaddingForEveryPrecision) {
  const int P = 4, width = 37, depth = 3;
  const double psi = params_of(width, depth);
  struct Case {
    const char* precision;
    const char* master;
    theory::ZeroPrecision bytes;
  };
  for (const Case& c :
       {Case{"fp32", "keep", {4, 4, 8}}, Case{"bf16", "keep", {2, 2, 12}}, Case{"bf16", "none", {2, 2, 8}}}) {
    Trace trace(P);
    const Report rep = run_zero(P,
                                {{"precision", c.precision},
                                 {"master", c.master},
                                 {"width", std::to_string(width)},
                                 {"depth", std::to_string(depth)},
                                 {"batch", "8"}},
                                trace);
    EXPECT_TRUE(rep.ok) << c.precision << "/" << c.master << "\n" << rep.to_text();
    const double padding = row(rep, "zero0.padding");
    for (int stage : {0, 1, 2, 3}) {
      const std::string n = "zero" + std::to_string(stage) + ".";
      const double formula = psi * theory::zero_bytes_per_param(stage, P, c.bytes).total();
      const double measured = row(rep, n + "model_state_bytes");
      const double bound = (c.bytes.param + c.bytes.grad + c.bytes.optimizer) * padding;
      std::printf("%s/%s stage %d: model state %.0f B, formula %.0f B, bound ±%.0f B\n", c.precision, c.master, stage,
                  measured, formula, bound);
      EXPECT_LE(std::fabs(measured - formula), bound) << n << c.precision;
      if (stage == 0) { EXPECT_EQ(measured, formula) << "DDP holds no padding"; }
    }
  }
}

TEST(ZeroLab, BytesOnTheWireAreExactFromTheEvents) {
  // One stage per run, so every collective event of the run belongs to it: count the ring
  // bytes here from the raw events, not from the lab's rows.
  const int P = 3, width = 37, depth = 3;
  for (int stage : {0, 1, 2, 3}) {
    Trace trace(P);
    std::map<std::string, std::string> options = {{"stage", std::to_string(stage)},
                                                  {"precision", "bf16"},
                                                  {"width", std::to_string(width)},
                                                  {"depth", std::to_string(depth)},
                                                  {"batch", "12"}};
    if (stage > 0) options["unit"] = "1";  // (stage 0 has no units: --unit there is refused)
    const Report rep = run_zero(P, options, trace);
    ASSERT_TRUE(rep.ok) << rep.to_text();
    // Padded elements: every layer (a unit) rounded up to a multiple of P.
    double padded = 0;
    for (int l = 0; l < depth; ++l) {
      const double in = l == 0 ? 64 : width, out = l == depth - 1 ? 64 : width, n = in * out + out;
      padded += std::ceil(n / P) * P;
    }
    const double psi = params_of(width, depth), ring = double(P - 1) / P;
    const double expected = stage == 0 ? 2 * ring * 2 * psi : (stage == 3 ? 3 : 2) * ring * 2 * padded;
    // Outside the steps the lab all-reduces each step's loss and its timings and gathers
    // the memory pictures, all under 1 KiB; every unit (the smallest is 64 + 64·37
    // elements of 2 bytes) and bucket is larger: count only those.
    double rs = 0, ag = 0, ar = 0;
    const EventLog& log = trace.log(0, kStreamComm);
    for (std::size_t i = 0; i < log.size(); ++i) {
      const Event& e = log[i];
      if (e.kind != EventKind::collective || e.bytes < 1024) continue;
      const std::string name = trace.label_name(e.label);
      if (name == "reduce_scatter") rs += double(e.bytes);
      if (name == "all_gather") ag += double(e.bytes);
      if (name == "all_reduce") ar += double(e.bytes);
    }
    const int steps = 1 + 1 * 2;  // warm-up + one run of 2 steps
    const double measured = stage == 0 ? 2 * ring * ar : ring * (rs + ag);
    std::printf("stage %d: %.1f ring bytes per step from events, expected %.1f\n", stage, measured / steps, expected);
    if (stage > 0) {
      EXPECT_DOUBLE_EQ(ring * rs / steps, ring * 2 * padded) << "one reduce-scatter of every padded unit";
      EXPECT_DOUBLE_EQ(ring * ag / steps, (stage == 3 ? 2 : 1) * ring * 2 * padded) << "all-gathers";
      EXPECT_EQ(ar, 0) << "ZeRO 1-3 never all-reduce gradients";
    }
    EXPECT_NEAR(measured / steps, expected, 1e-9 * expected);
    EXPECT_NEAR(row(rep, "zero" + std::to_string(stage) + ".bus_bytes_per_step"), expected, 1e-6 * expected);
  }
}

TEST(ZeroLab, StageTwoNeverHoldsAllGradientsAndStageThreeNeverAllParameters) {
  const int P = 2, width = 64, depth = 6;
  const double psi = params_of(width, depth);
  Trace trace(P);
  const Report rep = run_zero(P, {{"precision", "fp32"}, {"width", "64"}, {"depth", "6"}, {"batch", "8"}}, trace);
  ASSERT_TRUE(rep.ok) << rep.to_text();
  // Stage 2: its shard (Ψ/N) plus at most two unit buckets in flight, far below Ψ.
  const double grads2 = row(rep, "zero2.grad_bytes") + row(rep, "zero2.residual_buckets");
  EXPECT_LT(grads2, 4 * psi * 0.9) << "stage 2 held " << grads2 << " B of gradients; the whole buffer is " << 4 * psi;
  // Stage 3: its shard plus the gather buffers of two units (prefetch 1).
  const double params3 = row(rep, "zero3.param_bytes") + row(rep, "zero3.residual_gather");
  EXPECT_LT(params3, 4 * psi * 0.9) << "stage 3 held " << params3 << " B of parameters; the whole model is " << 4 * psi;
}

TEST(ZeroLab, PrefetchSweepTradesMemoryForExposedGathers) {
  Trace trace(2);
  const Report rep = run_zero(
      2,
      {{"stage", "3"}, {"sweep", "prefetch"}, {"precision", "fp32"}, {"width", "64"}, {"depth", "6"}, {"batch", "8"}},
      trace);
  ASSERT_TRUE(rep.ok) << rep.to_text();
  // Depth d keeps d + 1 units' gather buffers alive (at the ends of a pass, fewer):
  // hidden layers are 64·64 + 64 elements, gathered as fp32.
  const double hidden = (64.0 * 64 + 64) * 4;
  EXPECT_EQ(row(rep, "prefetch0.gather_peak"), hidden) << "without prefetch one unit at a time";
  EXPECT_EQ(row(rep, "prefetch1.gather_peak"), 2 * hidden) << "depth 1: the unit computing and the next";
  EXPECT_GT(row(rep, "prefetch1.gather_peak"), row(rep, "prefetch0.gather_peak"));
  EXPECT_GT(row(rep, "prefetch2.gather_peak"), row(rep, "prefetch1.gather_peak"));
  ASSERT_EQ(rep.plots.size(), 1u);
  EXPECT_EQ(rep.plots[0].x.size(), 4u);  // depths 0, 1, 2, 4
}

TEST(ZeroLab, BadOptionsAreUsageErrorsBeforeAnyAllocation) {
  Trace trace(4);
  EXPECT_THROW(run_zero(4, {{"stage", "4"}}, trace), UsageError);
  EXPECT_THROW(run_zero(4, {{"unit", "0"}}, trace), UsageError);
  EXPECT_THROW(run_zero(2, {{"precision", "fp32"}, {"master", "none"}}, trace), UsageError);
  EXPECT_THROW(run_zero(2, {{"stage", "1"}, {"sweep", "prefetch"}}, trace), UsageError);
}
