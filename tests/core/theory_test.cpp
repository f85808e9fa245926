// core/theory against hand-computed values and the curriculum's worked examples.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/theory/zero.h"

using namespace dtl;
using namespace dtl::theory;

TEST(Theory, RingAllReduceBytesStepsAndTime) {
  const CommCost c = all_reduce_cost(AlgorithmKind::ring, 4, 1000, {1e-6, 1e9});
  EXPECT_DOUBLE_EQ(c.bytes_per_rank, 1500);  // 2·3/4·1000
  EXPECT_EQ(c.steps, 6);
  EXPECT_EQ(c.messages_per_rank, 6);
  EXPECT_DOUBLE_EQ(c.time_s, 6e-6 + 1.5e-6);
}

TEST(Theory, CurriculumWorkedExamples) {
  // 7B fp16 gradients (14 GB) on 8 GPUs at 600 GB/s: ≈ 41 ms per all-reduce.
  EXPECT_NEAR(ring_all_reduce_time(8, 14e9, {0, 600e9}), 0.0408, 5e-4);
  // 200 MB among 16 GPUs at 100 GB/s: 3.75 ms.
  EXPECT_NEAR(ring_all_reduce_time(16, 200e6, {0, 100e9}), 3.75e-3, 1e-9);
  // 10 ms of compute and 8 ms of communication: 55% efficiency.
  EXPECT_NEAR(comm_efficiency(0.010, 0.008), 0.5556, 1e-4);
}

TEST(Theory, RecursiveHalvingDoublingPowerOfTwoAndNot) {
  const CommCost p8 = all_reduce_cost(AlgorithmKind::rhd, 8, 1000);
  EXPECT_DOUBLE_EQ(p8.bytes_per_rank, 1750);
  EXPECT_EQ(p8.steps, 6);                                            // 2·log2 8
  const CommCost p6 = all_reduce_cost(AlgorithmKind::rhd, 6, 1000);  // core of 4, two ranks pair up
  EXPECT_DOUBLE_EQ(p6.bytes_per_rank, 1500 + 1000);
  EXPECT_EQ(p6.steps, 2 * 2 + 2);
  EXPECT_EQ(p6.messages_per_rank, 5);
}

TEST(Theory, TreeAndNaive) {
  EXPECT_DOUBLE_EQ(all_reduce_cost(AlgorithmKind::tree, 5, 1000).bytes_per_rank, 3000);  // ⌈log2 5⌉ = 3
  EXPECT_EQ(all_reduce_cost(AlgorithmKind::tree, 5, 1000).steps, 6);
  EXPECT_DOUBLE_EQ(all_reduce_cost(AlgorithmKind::naive, 4, 1000).bytes_per_rank, 3000);
  EXPECT_EQ(all_reduce_cost(AlgorithmKind::naive, 4, 1000).steps, 6);
  EXPECT_DOUBLE_EQ(all_reduce_cost(AlgorithmKind::ring, 1, 1000).bytes_per_rank, 0);
}

TEST(Theory, LatencyRhdBeatsRingForSmallMessages) {
  const Link link{5e-6, 25e9};
  EXPECT_LT(all_reduce_cost(AlgorithmKind::rhd, 64, 1024, link).time_s,
            all_reduce_cost(AlgorithmKind::ring, 64, 1024, link).time_s);
  EXPECT_LT(all_reduce_cost(AlgorithmKind::ring, 64, 1e9, link).time_s,
            all_reduce_cost(AlgorithmKind::tree, 64, 1e9, link).time_s);
}

TEST(Theory, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::reduce_scatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::all_to_all, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::broadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::reduce, 4), 1.0);
}

// Issue 51: the sliced ring keeps the ring's bytes and steps with S times the messages; the
// double tree on 12 ranks (NCCL's picture in trees.cc): rank 8 has a parent and two children
// in tree 0 and is a leaf in tree 1, so it sends N/2 × 4 = 2N; its latency grows with log2 P.
TEST(Theory, SlicedRingAndDoubleTreeCosts) {
  const CommCost ring = all_reduce_cost(AlgorithmKind::ring, 8, 8000), sliced = ring_sliced_all_reduce_cost(8, 8000, 4);
  EXPECT_EQ(sliced.bytes_per_rank, ring.bytes_per_rank);
  EXPECT_EQ(sliced.steps, ring.steps);
  EXPECT_EQ(sliced.messages_per_rank, 4 * ring.messages_per_rank);
  EXPECT_EQ(ring_slices(1), 1);
  EXPECT_EQ(ring_slices(16.0 * 1024 * 1024), 64);
  const TreeLinks r8 = double_tree_links(12, 8, 0);
  EXPECT_EQ(r8.parent, 0);
  EXPECT_EQ(r8.children[0], 4);
  EXPECT_EQ(r8.children[1], 10);
  EXPECT_EQ(double_tree_links(12, 11, 1).parent, -1);  // tree 1 mirrors tree 0: its root is 11
  const CommCost dt = double_tree_all_reduce_cost(12, 1000, 3);
  EXPECT_EQ(dt.bytes_per_rank, 2000);
  EXPECT_EQ(dt.messages_per_rank, 4 * 3);
  EXPECT_EQ(dt.steps, 12);  // a tag per chunk, direction and tree: 4K
  // The fill, counted by hand on the trees: P = 4, tree 0 is 0 <- 2 <- {1, 3}: from 1, rank 2's
  // two children then the root's one, 3; P = 8, 0 <- 4 <- {2, 6}, 2 <- {1, 3}: 2 + 2 + 1 = 5.
  EXPECT_EQ(double_tree_fill_hops(2), 1);
  EXPECT_EQ(double_tree_fill_hops(4), 3);
  EXPECT_EQ(double_tree_fill_hops(8), 5);
  const Link link{5e-6, 25e9};  // small messages: the tree's log2 P beats the ring's P at 64 ranks
  EXPECT_LT(double_tree_all_reduce_cost(64, 1024, 1, link).time_s,
            all_reduce_cost(AlgorithmKind::ring, 64, 1024, link).time_s);
}

TEST(Theory, NamesParseBothWays) {
  for (AlgorithmKind a : {AlgorithmKind::naive, AlgorithmKind::ring, AlgorithmKind::tree, AlgorithmKind::rhd,
                          AlgorithmKind::ring_sliced, AlgorithmKind::double_tree})
    EXPECT_EQ(parse_algorithm_kind(algorithm_kind_name(a)), a);
  EXPECT_FALSE(parse_algorithm_kind("butterfly").has_value());
  EXPECT_THROW(all_reduce_cost(AlgorithmKind::library, 4, 1000), dtl::Error);  // no formula for the library's own
  EXPECT_EQ(ceil_log2(1), 0);
  EXPECT_EQ(ceil_log2(5), 3);
  EXPECT_EQ(floor_pow2(7), 4);
}

// The curriculum's ZeRO numbers, each in the convention its seed uses.
TEST(ZeroTheory, SeedsWorkedExamples) {
  const double GB = 1e9;
  // seed 002, 13B in fp16 with fp32 Adam states (12 bytes/param): (a) 156, (b) ZeRO-2 on 8 GPUs
  // 42.25, (c) ZeRO-3 on 8 GPUs 19.5 GB per GPU.
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(13e9, 0, 1, ZeroConvention::twelve) / GB, 156.0);
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(13e9, 2, 8, ZeroConvention::twelve) / GB, 42.25);
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(13e9, 3, 8, ZeroConvention::twelve) / GB, 19.5);
  // seed 002: per parameter, ZeRO-1 4 + 8/N, ZeRO-2 at N = 8: 3.25, ZeRO-3 at N = 8: 1.5.
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(1, 4, ZeroConvention::twelve).total(), 4 + 8.0 / 4);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(2, 8, ZeroConvention::twelve).total(), 3.25);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(3, 8, ZeroConvention::twelve).total(), 1.5);
  // seed 001, 175B on 16 GPUs, 2+2+4 bytes: ZeRO-3 87.5 GB (its 1,050 GB DDP figure is params +
  // optimizer without the gradients: 350 + 700).
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(175e9, 3, 16, ZeroConvention::eight) / GB, 87.5);
  const ZeroBytes ddp = zero_bytes_per_param(0, 16, ZeroConvention::eight);
  EXPECT_DOUBLE_EQ(175e9 * (ddp.params + ddp.optimizer) / GB, 1050.0);
  // seed 003's milestone, 100M parameters on 2 GPUs, 16 bytes/param: DDP ~1.6, ZeRO-2 ~0.9,
  // FSDP (ZeRO-3) ~0.8 GB of model state per GPU.
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(100e6, 0, 2, ZeroConvention::sixteen) / GB, 1.6);
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(100e6, 2, 2, ZeroConvention::sixteen) / GB, 0.9);
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(100e6, 3, 2, ZeroConvention::sixteen) / GB, 0.8);
  // seed 004 with K = 12: 2Ψ + 2Ψ + KΨ/N, 2Ψ + (2+K)Ψ/N, (4+K)Ψ/N.
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(1, 8, ZeroConvention::sixteen).total(), 4 + 12.0 / 8);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(2, 8, ZeroConvention::sixteen).total(), 2 + 14.0 / 8);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(3, 8, ZeroConvention::sixteen).total(), 16.0 / 8);
  EXPECT_THROW(zero_bytes_per_param(4, 8, ZeroConvention::sixteen), dtl::UsageError);
}

TEST(ZeroTheory, Fp32RunIsFourFourEight) {
  // fp32 weights, grads, m, v: 16 B/param split 4+4+8, so ZeRO-1 keeps 8 + 8/N.
  const ZeroPrecision fp32{4, 4, 8};
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(0, 4, fp32).total(), 16);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(1, 4, fp32).total(), 8 + 8.0 / 4);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(2, 4, fp32).total(), 4 + 12.0 / 4);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(3, 4, fp32).total(), 16.0 / 4);
  EXPECT_DOUBLE_EQ(zero_bytes_per_param(2, 3, ZeroConvention::sixteen).total(),
                   zero_bytes_per_param(2, 3, zero_precision(ZeroConvention::sixteen)).total());
}

TEST(ZeroTheory, CommunicationPerRankPerStep) {
  // 2Ψ(N-1)/N for DDP and stages 1-2 (reduce-scatter + all-gather), 3Ψ(N-1)/N for stage 3.
  for (int stage : {0, 1, 2}) EXPECT_DOUBLE_EQ(zero_comm_elements_per_rank(1000, stage, 4), 1500);
  EXPECT_DOUBLE_EQ(zero_comm_elements_per_rank(1000, 3, 4), 2250);
  EXPECT_DOUBLE_EQ(zero_comm_elements_per_rank(1000, 3, 1), 0);
}
