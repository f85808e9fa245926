// The step simulation (labs/simulate/cluster_sim.h) against hand computations: a step with
// no pipeline is compute + TP + DP; uniform stages give the bubble (P−1)/(M+P−1); 1F1B with a
// message cost c adds 2(P−1)c to one micro-batch's trip; 16,384 GPUs cost one timeline per stage.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/simulate/sim_trace.h"
#include "labs/simulate/workload.h"

namespace sim = dtl::sim;

namespace {

sim::Workload small(int dp, int tp, int pp, int M) {
  sim::Workload w;
  w.dp = dp, w.tp = tp, w.pp = pp, w.micro_batches = M;
  w.stage_layers = sim::split_layers(4 * pp, pp);
  w.layer_forward_flops = 1e9, w.layer_backward_flops = 2e9, w.flops_per_s = 1e12;  // 1 ms, 2 ms per layer
  w.tp_bytes = 1e6, w.pp_bytes = 0;
  w.dp_bytes.assign(std::size_t(pp), 8e6);
  const dtl::theory::Link link{10e-6, 1e9};
  w.tp_route = sim::route(tp, 1, 8, link, link, sim::CommAlgo::ring);
  w.dp_route = sim::route(dp, tp, 8, link, link, sim::CommAlgo::ring);
  const dtl::theory::Link free{0, 1e9};  // pp_bytes 0 on it: messages between stages cost nothing
  w.pp_route = sim::route(pp, long(dp) * tp, 8, free, free, sim::CommAlgo::ring);
  return w;
}

}  // namespace

TEST(ClusterSim, StepWithoutPipelineIsComputePlusTpPlusDp) {
  const sim::Workload w = small(2, 2, 1, 3);
  // per layer: forward 1 ms + 2 TP all-reduces, backward 2 ms + 2; 4 layers, 3 micro-batches
  const double tp = 2 * 1 * 10e-6 + 2.0 * 1 / 2 * 1e6 / 1e9;  // ring over 2: 2(n−1)α + 2(n−1)/n·N/β
  const double dp = 2 * 1 * 10e-6 + 2.0 * 1 / 2 * 8e6 / 1e9;
  const double hand = 3 * 4 * (1e-3 + 2e-3 + 4 * tp) + dp;
  const sim::SimResult r = sim::simulate_step(w);
  EXPECT_NEAR(r.step_s, hand, 1e-12) << "simulated " << r.step_s << " hand " << hand;
  EXPECT_NEAR(r.stages[0].tp, 3 * 4 * 4 * tp, 1e-12);
  EXPECT_NEAR(r.stages[0].dp, dp, 1e-12);
}

TEST(ClusterSim, UniformStagesGiveTheClassicBubble) {
  for (int P : {2, 4, 8})
    for (int M : {8, 16, 32}) {
      const sim::SimResult r = sim::simulate_step(small(1, 1, P, M));
      const double want = double(P - 1) / (M + P - 1);
      EXPECT_NEAR(r.pipeline_bubble, want, 1e-9) << "P " << P << " M " << M;
      EXPECT_NEAR(r.step_s, (M + P - 1) * 4 * 3e-3, 1e-9) << "P " << P << " M " << M;
    }
}

// Interleaving v chunks per stage (Narayanan et al. 2021): with uniform layers and free
// messages the step is (v·M + P − 1) chunk-actions of 4/v layers, bubble (P−1)/(v·M+P−1);
// each chunk sends at the end of its virtual stage (the last stage's chunk 0 to stage 0).
TEST(ClusterSim, InterleavedChunksShrinkTheBubbleByV) {
  for (int v : {2, 4})
    for (const auto& [P, M] : {std::pair{2, 4}, {4, 8}, {4, 16}}) {
      sim::Workload w = small(1, 1, P, M);
      w.schedule = dtl::pipeline::ScheduleKind::interleaved;
      w.chunks = v;
      const sim::SimResult r = sim::simulate_step(w);
      const double chunk_action = 4.0 / v * 3e-3;  // F + B of 4/v layers
      EXPECT_NEAR(r.pipeline_bubble, double(P - 1) / (v * M + P - 1), 1e-9) << "P " << P << " M " << M << " v " << v;
      EXPECT_NEAR(r.step_s, (v * M + P - 1) * chunk_action, 1e-9) << "P " << P << " M " << M << " v " << v;
      int sends = 0;
      for (const auto& span : r.stages[std::size_t(P - 1)].spans) sends += span.kind == sim::SpanKind::send;
      // The last stage sends every chunk's activations on but its last's, and every chunk's
      // gradient back: M·(v − 1) + M·v.
      EXPECT_EQ(sends, M * (v - 1) + M * v) << "P " << P << " M " << M << " v " << v;
    }
  sim::Workload odd = small(1, 1, 2, 4);
  odd.schedule = dtl::pipeline::ScheduleKind::interleaved;
  odd.chunks = 3;  // 4 layers per stage do not split into 3 chunks
  EXPECT_THROW(sim::simulate_step(odd), dtl::UsageError);
  sim::Workload not_interleaved = small(1, 1, 2, 4);
  not_interleaved.chunks = 2;
  EXPECT_THROW(sim::simulate_step(not_interleaved), dtl::UsageError);
}

// The DP all-reduce in buckets during the last backward (PyTorch DDP), by hand: 4 layers of
// 2e6 gradient bytes, F 1 ms and B 2 ms per layer, buckets of 4e6 bytes (two layers) on a
// ring of 2: α 10 µs, β 1 GB/s, so a bucket takes 2·10 µs + 4e6 B / 1 GB/s = 4.02 ms.
TEST(ClusterSim, BucketsOverlapTheAllReduceWithTheLastBackward) {
  sim::Workload w = small(2, 1, 1, 1);
  const double bucket = 20e-6 + 4e-3;
  const double after = 4e-3 + 8e-3 + (20e-6 + 8e-3);  // F, B, then one all-reduce of 8e6 B
  EXPECT_NEAR(sim::simulate_step(w).step_s, after, 1e-12);
  w.dp_bucket_bytes = 4e6;
  const sim::SimResult r = sim::simulate_step(w);
  // bucket 1 ready after two layers of backward (4 + 4 ms), bucket 2 when backward ends (12
  // ms) but its stream is busy until 8 + 4.02 ms: it runs 12.02 to 16.04 ms.
  const double first_end = 8e-3 + bucket, second_end = std::max(12e-3, first_end) + bucket;
  EXPECT_NEAR(r.step_s, second_end, 1e-12) << "simulated " << r.step_s;
  EXPECT_NEAR(r.stages[0].dp, 2 * bucket, 1e-12);
  EXPECT_NEAR(r.stages[0].dp_exposed, second_end - 12e-3, 1e-12);
  int overlapped = 0;
  for (const sim::Span& s : r.stages[0].spans) overlapped += s.on_comm_stream;
  EXPECT_EQ(overlapped, 2);
  // Interleaved: each chunk's gradients are final after its own last backward; every byte is
  // still reduced once (two chunks of two layers: one bucket each, 4e6 B).
  sim::Workload chunked = small(2, 1, 2, 2);
  chunked.schedule = dtl::pipeline::ScheduleKind::interleaved;
  chunked.chunks = 2;
  chunked.dp_bucket_bytes = 4e6;
  const sim::SimResult rc = sim::simulate_step(chunked);
  for (const sim::StageTimeline& stage : rc.stages) {
    double bytes = 0;
    for (const sim::Span& s : stage.spans) bytes += s.on_comm_stream ? s.bytes : 0;
    EXPECT_NEAR(bytes, 8e6, 1e-6) << "every gradient byte of the stage all-reduced once";
  }
  w.zero = 2;
  EXPECT_THROW(sim::simulate_step(w), dtl::UsageError) << "ZeRO-2 reduces per micro-batch already";
}

// ZeRO-1 as Megatron's distributed optimizer, by hand on the same ring of 2 (8e6 gradient
// bytes, F 4 ms, B 8 ms, an optimizer step of 1 ms): reduce-scatter (10 µs + 4 ms), the
// step, all-gather (10 µs + 4 ms): the all-reduce's bytes and time, split around the step.
TEST(ClusterSim, ZeroOneReduceScattersStepsItsShardAndAllGathers) {
  sim::Workload w = small(2, 1, 1, 1);
  w.zero = 1;
  w.stage_host_s = {1e-3};
  const double half = 10e-6 + 4e-3;
  const sim::SimResult r = sim::simulate_step(w);
  EXPECT_NEAR(r.step_s, 12e-3 + half + 1e-3 + half, 1e-12) << "simulated " << r.step_s;
  EXPECT_NEAR(r.stages[0].dp, 2 * half, 1e-12) << "the bytes and time of one all-reduce";
  EXPECT_NEAR(r.stages[0].dp_exposed, 2 * half, 1e-12);
  std::vector<std::string> tail;
  for (const sim::Span& s : r.stages[0].spans)
    if (s.kind == sim::SpanKind::collective || s.kind == sim::SpanKind::host) tail.push_back(s.label);
  const std::vector<std::string> want = {"reduce_scatter gradients", "optimizer and host work",
                                         "all_gather parameters"};
  EXPECT_EQ(tail, want);
  // Overlapped: two buckets of 4e6 B reduce-scattered (10 µs + 2 ms each) beside the backward,
  // ready at 8 and 12 ms; then the step and the all-gather.
  w.dp_bucket_bytes = 4e6;
  const sim::SimResult b = sim::simulate_step(w);
  const double last_bucket_end = 12e-3 + 10e-6 + 2e-3;
  EXPECT_NEAR(b.step_s, last_bucket_end + 1e-3 + half, 1e-12) << "simulated " << b.step_s;
  double scattered = 0;
  for (const sim::Span& s : b.stages[0].spans)
    if (s.on_comm_stream) {
      scattered += s.bytes;
      EXPECT_EQ(s.label, "reduce_scatter gradients (bucket)");
    }
  EXPECT_NEAR(scattered, 8e6, 1e-6) << "every gradient byte reduce-scattered once";
  // ZeRO-2 steps before it gathers too; ZeRO-0 all-reduces and gathers nothing.
  w.dp_bucket_bytes = 0, w.zero = 2;
  const sim::SimResult z2 = sim::simulate_step(w);
  EXPECT_EQ(z2.stages[0].spans.back().label, "all_gather parameters");
  w.zero = 0;
  const sim::SimResult z0 = sim::simulate_step(w);
  for (const sim::Span& s : z0.stages[0].spans) EXPECT_NE(s.label, "all_gather parameters");
}

// The optimizer step from a plan: AdamW touches grad + 2·K + param bytes per parameter (2 +
// 24 + 2 = 28 under 2+2+12) at the GPU's memory bandwidth, on 1/dp of them with ZeRO ≥ 1.
TEST(ClusterSim, OptimizerStepIsItsBytesOverTheMemoryBandwidth) {
  const auto model = dtl::theory::model_preset("7b");
  auto cluster = dtl::theory::cluster_preset("a100-80gb");
  cluster.gpus = 16;
  for (int zero : {0, 1, 3}) {
    const dtl::theory::Plan p =
        dtl::theory::plan(model, cluster, {.dp = 4, .tp = 2, .pp = 2, .zero = zero, .micro_batches = 8});
    const sim::Workload w = sim::workload_from_plan(p, dtl::pipeline::ScheduleKind::one_f_one_b, sim::CommAlgo::ring);
    ASSERT_EQ(w.stage_host_s.size(), 2u);
    for (std::size_t s = 0; s < 2; ++s) {
      const double params = p.psi * w.stage_layers[s] / model.layers / 2 / (zero >= 1 ? 4 : 1);
      EXPECT_NEAR(w.stage_host_s[s], params * 28 / cluster.memory_Bps, 1e-15) << "ZeRO-" << zero << " stage " << s;
    }
  }
}

TEST(ClusterSim, OneMicroBatchCrossesEveryBoundaryTwice) {
  // One micro-batch goes forward through P stages and back: P(F + B) + 2(P − 1)c.
  sim::Workload w = small(1, 1, 4, 1);
  w.schedule = dtl::pipeline::ScheduleKind::gpipe;
  w.pp_bytes = 1e6;
  const dtl::theory::Link link{10e-6, 1e9};
  w.pp_route = sim::route(4, 1, 8, link, link, sim::CommAlgo::ring);
  const double c = 10e-6 + 1e-3, F = 4e-3, B = 8e-3;
  EXPECT_NEAR(sim::simulate_step(w).step_s, 4 * (F + B) + 2 * (4 - 1) * c, 1e-9);
}

TEST(ClusterSim, SixteenThousandGpusCostOneTimelinePerStage) {
  sim::Workload w = small(128, 8, 16, 64);
  const auto t0 = std::chrono::steady_clock::now();
  const sim::SimResult r = sim::simulate_step(w);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(w.gpus(), 16384);
  EXPECT_EQ(r.stages.size(), 16u);
  EXPECT_LT(s, 10.0) << "a release build takes well under 1 s";
  EXPECT_EQ(sim::default_trace_ranks(w).size(), 16u + 127u);  // one pipeline + rank 0's DP group
}

TEST(ClusterSim, TraceRanksThatDoNotExistAreRefused) {
  const sim::Workload w = small(2, 2, 2, 4);
  EXPECT_EQ(sim::parse_trace_ranks("0,3-5", w), (std::vector<int>{0, 3, 4, 5}));
  EXPECT_THROW(sim::parse_trace_ranks("8", w), dtl::UsageError);
  EXPECT_THROW(sim::parse_trace_ranks("5-2", w), dtl::UsageError);
  EXPECT_THROW(sim::parse_trace_ranks("x", w), dtl::UsageError);
  EXPECT_THROW(sim::parse_trace_ranks("all", small(128, 8, 16, 64)), dtl::UsageError);
}

TEST(ClusterSim, RoutesSayWhichLinkEachAxisUses) {
  const dtl::theory::Link nv{5e-6, 600e9}, ib{10e-6, 25e9};
  EXPECT_FALSE(sim::route(8, 1, 8, nv, ib, sim::CommAlgo::ring).crosses_nodes());       // tp 8 in a node
  const sim::AxisRoute dp = sim::route(16, 4, 8, nv, ib, sim::CommAlgo::hierarchical);  // tp 4: 2 dp ranks per node
  EXPECT_EQ(dp.per_node, 2);
  EXPECT_TRUE(dp.crosses_nodes());
  const sim::AxisRoute flat = sim::route(16, 4, 8, nv, ib, sim::CommAlgo::ring);
  EXPECT_LT(dp.all_reduce(1e9), flat.all_reduce(1e9));  // half the bytes cross the slow link
}

// The calibration's inputs (labs/cli/simulate_calibrate.cpp): measured seconds per layer call
// instead of FLOPs / rate, the host work per step, the grid lab's --compute-us floor, and the
// backend's cost per call — each against a hand computation.
TEST(ClusterSim, MeasuredLayerTimesAndHostWorkReplaceTheFlopModel) {
  sim::Workload w = small(1, 1, 1, 3);
  w.stage_layer_forward_s = {2e-3}, w.stage_layer_backward_s = {5e-3}, w.stage_host_s = {1e-3};
  const sim::SimResult r = sim::simulate_step(w);
  const double hand = 3 * 4 * (2e-3 + 5e-3) + 1e-3;  // 3 micro-batches × 4 layers, then the optimizer
  EXPECT_NEAR(r.step_s, hand, 1e-12) << "simulated " << r.step_s << " hand " << hand;
  EXPECT_NEAR(r.stages[0].host, 1e-3, 1e-12);
  w.stage_host_s = {1e-3, 2e-3};  // one per stage, and there is one stage
  EXPECT_THROW(sim::simulate_step(w), dtl::UsageError);
}

TEST(ClusterSim, ComputeFloorPacesEveryActionAsTheGridLabDoes) {
  // --compute-us 10000: F lasts 10 ms (its 4 layers compute 4 ms), B 20 ms (8 ms): on 2 uniform
  // stages with free messages the step is (M + P − 1)·(F + B).
  sim::Workload w = small(1, 1, 2, 4);
  w.action_floor_s = 10e-3;
  const sim::SimResult r = sim::simulate_step(w);
  EXPECT_NEAR(r.step_s, (4 + 2 - 1) * 30e-3, 1e-9);
  EXPECT_NEAR(r.stages[0].compute, 4 * 4 * 3e-3, 1e-12);         // the layers' own compute
  EXPECT_NEAR(r.stages[0].host, 4 * (30e-3 - 4 * 3e-3), 1e-12);  // the paced rest of each F and B
  w.action_floor_s = 1e-3;                                       // below the compute: no effect
  EXPECT_NEAR(sim::simulate_step(w).step_s, (4 + 2 - 1) * 4 * 3e-3, 1e-9);
}

TEST(ClusterSim, CallOverheadIsPaidOncePerCollectiveAndSend) {
  const dtl::theory::Link link{500e-6, 0.32e9};
  sim::AxisRoute r = sim::route(2, 1, 8, link, link, sim::CommAlgo::ring);
  const double ring = 2 * 500e-6 + 2.0 * 1 / 2 * 32768 / 0.32e9, send = 500e-6 + 32768 / 0.32e9;
  EXPECT_NEAR(r.all_reduce(32768), ring, 1e-15);
  r.call_overhead_s = 80e-6;
  EXPECT_NEAR(r.all_reduce(32768), ring + 80e-6, 1e-15);
  EXPECT_NEAR(r.send(32768), send + 80e-6, 1e-15);
  EXPECT_NEAR(r.reduce_scatter(32768), 500e-6 + 0.5 * 32768 / 0.32e9 + 80e-6, 1e-15);
}

TEST(ClusterSim, HierarchicalNeedsWholeNodesElseOneRing) {
  // dp 3 with stride 4 on 8-GPU nodes: ranks 0, 4 in node 0, rank 8 in node 1.
  const dtl::theory::Link nv{1e-6, 100e9}, ib{10e-6, 10e9};
  const sim::AxisRoute r = sim::route(3, 4, 8, nv, ib, sim::CommAlgo::hierarchical);
  ASSERT_TRUE(r.crosses_nodes());
  const double bytes = 1e9;
  const double ring = 2 * 2 * (ib.alpha_s + bytes / 3 / ib.beta_Bps);  // 2 (n−1)(α + N/(nβ)), n = 3, on IB
  EXPECT_NEAR(r.all_reduce(bytes), ring, 1e-9 * ring);
  EXPECT_NE(r.describe("dp").find("over 2 nodes"), std::string::npos) << r.describe("dp");
}
