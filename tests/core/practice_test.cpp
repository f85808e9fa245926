// What real runs do (core/theory/practice.h, framework_memory.h, step_model.h) against independent
// references: Korthikanti's closed forms, the published parameter counts of the presets, the
// serial sum a ZeRO-3 layer chain without prefetch must equal, and the bytes DDP's buckets carry.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/theory/framework_memory.h"
#include "core/theory/kernel_time.h"
#include "core/theory/plan.h"
#include "core/theory/step_model.h"

namespace th = dtl::theory;

namespace {

th::ModelSpec gpt3() { return th::model_preset("gpt3-175b"); }

th::ParallelConfig korthikanti(int tp, th::OnOff sp) {  // the paper's tensors: dropout, unfused attention
  th::ParallelConfig p;
  p.tp = tp, p.micro_batch_size = 2;
  p.practice.sequence_parallel = sp;
  p.practice.dropout = th::OnOff::on;
  p.practice.attention = th::AttentionKernel::unfused;
  return p;
}

}  // namespace

TEST(Practice, ActivationsAreKorthikantisWithHisTensors) {
  const th::ModelSpec m = gpt3();
  double worst = 0;
  for (const int t : {1, 4, 8})
    for (const th::OnOff sp : {th::OnOff::on, th::OnOff::off})
      for (const th::Recompute r : {th::Recompute::none, th::Recompute::selective, th::Recompute::full}) {
        const double ours = th::layer_activation_bytes(m, korthikanti(t, sp), r);
        const double paper = th::korthikanti_layer_bytes(m.seq, 2, m.hidden, m.heads, t, sp == th::OnOff::on, r);
        worst = std::max(worst, std::abs(ours / paper - 1));
        EXPECT_NEAR(ours / paper, 1, 1e-12) << "t " << t << " sp " << int(sp) << " " << th::recompute_name(r);
      }
  std::printf("largest relative difference from Korthikanti et al.'s closed forms: %.3g\n", worst);
}

TEST(Practice, FlashAndNoDropoutDropTheirTerms) {
  const th::ModelSpec m = gpt3();
  th::ParallelConfig p = korthikanti(8, th::OnOff::on);
  const double sbh = 2048.0 * 2 * 12288;
  const double with_all = th::layer_activation_bytes(m, p, th::Recompute::none);
  p.practice.dropout = th::OnOff::off;  // two 1-byte masks, the scores' mask and dropout output go
  EXPECT_NEAR(with_all - th::layer_activation_bytes(m, p, th::Recompute::none),
              (2 * sbh + 3.0 * 96 * 2048 * 2048 * 2) / 8, 1);
  p.practice.attention = th::AttentionKernel::flash;  // no s² terms: 32·s·b·h/t and the log-sum-exp
  EXPECT_NEAR(th::layer_activation_bytes(m, p, th::Recompute::none), (32 * sbh + 4.0 * 96 * 2048 * 2) / 8, 1);
}

TEST(Practice, FlashComputesTheCausalHalfAtItsRate) {
  const th::ClusterSpec gpu = th::cluster_preset("a100-80gb");
  const th::ModelSpec m = gpt3();
  th::ParallelConfig p = korthikanti(8, th::OnOff::on);
  const th::LayerTime unfused = th::transformer_layer_time(gpu, m, p);
  p.practice.attention = th::AttentionKernel::flash;
  const th::LayerTime flash = th::transformer_layer_time(gpu, m, p);
  const double core = 4.0 * 2 * 2048 * 2048 * 12288 / 8;  // scores and values, every block
  EXPECT_NEAR(unfused.forward_gemm.flops - flash.forward_gemm.flops, core / 2, 1e-3 * core);
  EXPECT_LT(flash.forward_memory.bytes, unfused.forward_memory.bytes);  // no scores through HBM
}

TEST(Practice, WithoutSequenceParallelismTheNormsAndResidualsAreWhole) {
  const th::ClusterSpec gpu = th::cluster_preset("a100-80gb");
  const th::ModelSpec m = gpt3();
  th::ParallelConfig p = korthikanti(8, th::OnOff::on);
  p.practice.dropout = th::OnOff::off, p.practice.attention = th::AttentionKernel::flash;
  const double with_sp = th::transformer_layer_time(gpu, m, p).forward_memory.bytes;
  p.practice.sequence_parallel = th::OnOff::off;
  const double without = th::transformer_layer_time(gpu, m, p).forward_memory.bytes;
  // norms 4E and the two fused residual adds 6E, E = b·s·h: ÷ 8 with SP, whole without
  const double E = 2.0 * 2048 * 12288;
  EXPECT_NEAR(without - with_sp, 10 * E * 2 * (1 - 1.0 / 8), 1);
}

TEST(Practice, PresetsHaveTheirPublishedParameterCounts) {
  double worst = 0;
  for (const char* name : {"llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "gpt3-175b"}) {
    const th::ModelSpec m = th::model_preset(name);
    const th::PresetStatement stated = th::model_preset_statement(name);
    const double error = m.parameters() / stated.params - 1;
    std::printf("%-13s Ψ %.6g, stated %.6g (%+.3f %%), active %.4g; %s\n", name, m.parameters(), stated.params,
                100 * error, m.active_parameters(), stated.source.c_str());
    // GPT-3's 175.0B is its paper's rounding: the shape it tables counts 174.6B (−0.23 %).
    EXPECT_LT(std::abs(error), std::string(name) == "gpt3-175b" ? 3e-3 : 1e-3) << name;
    if (std::string(name) != "gpt3-175b") worst = std::max(worst, std::abs(error));
  }
  EXPECT_NEAR(th::model_preset("mixtral-8x7b").active_parameters() / 12.9e9, 1, 5e-3);  // "12.9B active"
  std::printf("largest relative difference (Llama 3, Mixtral): %.3g\n", worst);
}

TEST(Practice, ZeroThreeWithoutPrefetchIsTheSerialSum) {
  const th::LayerOverlap serial = th::zero3_layers(4, 1.0, 0.25, 0.5, 0);
  EXPECT_DOUBLE_EQ(serial.compute_begin.back(), 3 * 1.25 + 0.25);
  EXPECT_DOUBLE_EQ(serial.end, 4 * 1.25 + 0.5);  // the last reduce-scatter after the last layer
  const th::LayerOverlap ahead = th::zero3_layers(4, 1.0, 0.25, 0.5, 1);
  EXPECT_DOUBLE_EQ(ahead.end, 0.25 + 4 * 1.0 + 0.5);                  // only the first gather and the last scatter show
  const th::LayerOverlap slow = th::zero3_layers(4, 1.0, 2.0, 0, 1);  // gathers slower than layers
  EXPECT_DOUBLE_EQ(slow.end, 4 * 2.0 + 1.0);
}

TEST(Practice, BucketsCarryEveryGradientOnce) {
  double carried = 0;
  const auto buckets = th::gradient_buckets(0, 1.0, 10, 100.0, 25.0, [](double b) { return b / 50; });
  for (const th::Bucket& b : buckets) carried += b.bytes;
  EXPECT_DOUBLE_EQ(carried, 100);
  EXPECT_EQ(buckets.size(), 4u);  // 30 (3 layers of 10 fill 25), 30, 30, the last 10
  EXPECT_DOUBLE_EQ(buckets.back().end, 10 + 10.0 / 50);
}

// FSDP's known loss at a fixed global batch (issue 45): as dp grows each GPU's layers shrink to fewer
// tokens while every layer's gather keeps its latency and its bytes, so throughput per GPU falls.
TEST(Practice, ZeroThreeLosesThroughputPerGpuAsDataParallelismGrows) {
  th::ModelSpec m = th::model_preset("llama3-8b");
  m.seq = 2048;
  double before = 0;
  for (const int dp : {8, 64, 256}) {
    th::ClusterSpec c = th::cluster_preset("a100-80gb");
    c.gpus = dp;
    th::ParallelConfig p;
    p.dp = dp, p.zero = 3, p.micro_batch_size = 256 / dp, p.micro_batches = 1;
    p.practice = th::framework_practice(th::Framework::fsdp);
    const th::Plan pl = th::plan(m, c, p);
    const double per_gpu = pl.tokens_per_s / dp;
    std::printf("dp %3d, %3d sequences per GPU: %.0f tokens/s per GPU, DP exposed %.3g s of %.3g s\n", dp,
                p.micro_batch_size, per_gpu, pl.time.dp, pl.time.total());
    if (before > 0) { EXPECT_LT(per_gpu, before) << "dp " << dp; }
    before = per_gpu;
  }
}

// ZeRO-3 holds whole layers between their all-gather and their reshard: the running layer and the
// prefetched ones in 16 bits, and one layer's unsharded gradients in the reduce precision. Llama 3
// 8B's layer by hand: Q and O 2·h², K and V 2·h·kv, gate, up and down 3·h·ffn, two RMSNorms 2·h.
TEST(Practice, ZeroThreeHoldsItsGatheredLayersAndOneLayersGradients) {
  const th::ModelSpec m = th::model_preset("llama3-8b");
  const double h = 4096, kv = 1024, ffn = 14336;
  const double layer = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h;
  EXPECT_DOUBLE_EQ(m.layer_parameters(), layer);
  th::ClusterSpec c = th::cluster_preset("h100-80gb");
  c.gpus = 8;
  for (const int prefetch : {0, 1, 2}) {
    for (const th::GradPrecision grads : {th::GradPrecision::fp32, th::GradPrecision::bf16}) {
      th::ParallelConfig p;
      p.dp = 8, p.zero = 3;
      p.practice = th::framework_practice(th::Framework::fsdp);
      p.practice.zero3_prefetch = prefetch, p.practice.grads = grads;
      double gathered = -1, unsharded = -1;
      for (const th::MemoryLine& l : th::plan(m, c, p).memory.framework) {
        if (l.id == "memory.zero3_gathered") gathered = l.bytes;
        if (l.id == "memory.zero3_unsharded_grads") unsharded = l.bytes;
      }
      EXPECT_DOUBLE_EQ(gathered, (1 + prefetch) * layer * 2) << "prefetch " << prefetch;
      EXPECT_DOUBLE_EQ(unsharded, layer * (grads == th::GradPrecision::fp32 ? 4 : 2));
    }
  }
  th::ParallelConfig zero1;
  zero1.dp = 8, zero1.zero = 1;
  for (const th::MemoryLine& l : th::plan(m, c, zero1).memory.framework)
    EXPECT_EQ(l.id.find("zero3"), std::string::npos) << "ZeRO-1 gathers no layer: " << l.id;
}

// torchtitan's op-level selective checkpointing (--recompute selective-op): of Llama's Q, K, V, O,
// gate, up and down matmuls it keeps the odd ones' outputs (Q, V, gate, down) with the layer's input
// and attention's output and log-sum-exp, and reruns K, O, up and every element-wise op in backward.
// Memory, rerun FLOPs and the hardware FLOPs per token by hand for Llama 3 8B (b 2, s 8192, one GPU).
TEST(Practice, SelectiveOpKeepsTheOddMatmulsAndRerunsTheEvenOnes) {
  const th::ModelSpec m = th::model_preset("llama3-8b");
  const double s = 8192, b = 2, h = 4096, kv = 1024, ffn = 14336, a = 32;
  th::ParallelConfig p;
  p.micro_batch_size = 2;
  p.practice = th::framework_practice(th::Framework::fsdp);  // flash attention, no sequence parallelism
  p.recompute = th::Recompute::selective_op;
  const double kept = 2 * s * b * (h + h + kv + ffn + h + h) + 4 * a * s * b;  // input, Q, V, gate, attention, down
  EXPECT_DOUBLE_EQ(th::layer_activation_bytes(m, p, th::Recompute::selective_op), kept);
  std::printf("kept per layer: selective-op %.3f GB, none %.3f GB\n", kept / 1e9,
              th::layer_activation_bytes(m, p, th::Recompute::none) / 1e9);
  EXPECT_LT(kept, th::layer_activation_bytes(m, p, th::Recompute::none));
  th::ClusterSpec c = th::cluster_preset("h100-80gb");
  c.gpus = 1;
  th::ParallelConfig none = p;
  none.recompute = th::Recompute::none;
  const th::LayerTime with = th::transformer_layer_time(c, m, p), without = th::transformer_layer_time(c, m, none);
  const double rerun_flops = 2 * s * b * (h * kv + h * h + h * ffn);  // K, O, up forward
  EXPECT_NEAR(with.backward_gemm.flops - without.backward_gemm.flops, rerun_flops, 1e-9 * rerun_flops);
  EXPECT_GT(with.backward_memory.seconds, without.backward_memory.seconds);  // the element-wise ops again
  const th::Plan op = th::plan(m, c, p), plain = th::plan(m, c, none);
  EXPECT_NEAR(op.hardware_flops_per_token - plain.hardware_flops_per_token, 32 * 2 * (h * kv + h * h + h * ffn), 1);
  EXPECT_GT(op.time.total(), plain.time.total());
  th::ParallelConfig unfused = p;
  unfused.practice.attention = th::AttentionKernel::unfused;
  EXPECT_THROW(th::plan(m, c, unfused), dtl::UsageError);
  th::ModelSpec moe = th::model_preset("mixtral-8x7b");
  EXPECT_THROW(th::plan(moe, c, p), dtl::UsageError);
}
