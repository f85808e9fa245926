// The DDP lab: every variant on several world sizes ends with the weights of one rank on
// the global batch. (The model itself is tested in train_substrate_test.cpp.)
#include "labs/ddp/ddp_lab.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/trace/trace.h"
#include "kernels/cpu/kernels.h"
#include "labs/train/compute_span.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {
Report run_ddp(int P, const std::map<std::string, std::string>& options, Trace& trace) {
  LabConfig cfg;
  cfg.ranks = P;
  cfg.repeat = 1;  // these tests check results, not timings: one timed run of --steps after the warm-up step
  cfg.options = options;
  return test::run_lab("ddp", cfg, trace);
}
}  // namespace

TEST(DdpLab, EveryVariantEqualsOneRankOnTheGlobalBatch) {
  ASSERT_NE(find_lab("ddp"), nullptr);
  for (int P : {1, 2, 4}) {
    Trace trace(P);
    const Report rep = run_ddp(
        P,
        {{"variant", "all"}, {"width", "32"}, {"depth", "3"}, {"batch", "16"}, {"steps", "4"}, {"bucket-mb", "0.004"}},
        trace);
    EXPECT_TRUE(rep.ok) << "P=" << P << "\n" << rep.to_text();
    for (const char* v : {"naive", "flat", "bucketed", "accumulate"}) {
      const ReportRow* d = rep.find(std::string(v) + ".weight_diff_vs_one_rank");
      ASSERT_NE(d, nullptr) << v;
      EXPECT_LT(d->measured, 1e-5) << v << " P=" << P << ": largest weight difference " << d->measured;
      const ReportRow *first = rep.find(std::string(v) + ".loss_first"),
                      *last = rep.find(std::string(v) + ".loss_last");
      EXPECT_LT(last->measured, first->measured) << v << ": the loss must go down";
    }
    EXPECT_GT(rep.find("bucketed.buckets")->measured, 1) << "a tiny bucket size must give several buckets";
    // The timeline's compute spans: per rank and variant, one forward, backward and optimizer
    // span per step (accumulate: one forward and backward per micro-batch); 1 warm-up step + 4.
    for (int r = 0; r < P; ++r) {
      int forward = 0, backward = 0, optimizer = 0;
      const EventLog& log = trace.log(r, kStreamMain);
      for (std::size_t i = 0; i < log.size(); ++i) {
        if (log[i].kind != EventKind::compute) continue;
        const std::string name = trace.label_name(log[i].label);
        forward += name == "forward";
        backward += name == "backward";
        optimizer += name == "optimizer";
      }
      const int micro = 4, steps = 1 + 4;               // the lab's default --micro-batches; warm-up + --steps 4
      EXPECT_EQ(optimizer, steps * 4) << "rank " << r;  // 4 variants
      EXPECT_EQ(forward, steps * 3 + steps * micro) << "rank " << r;  // accumulate runs `micro` per step
      EXPECT_EQ(backward, forward) << "rank " << r;
    }
  }
}

TEST(DdpLab, BadOptionsAreUsageErrors) {
  const LabInfo* lab = find_lab("ddp");
  LabConfig cfg;
  cfg.ranks = 3;
  cfg.options = {{"batch", "16"}};  // 16 rows do not split over 3 ranks
  cfg = with_defaults(*lab, cfg);
  ThreadsOptions opt;
  opt.world_size = 3;
  Trace trace(3);
  opt.trace = &trace;
  const RunResult r = run_threads(opt, [&](Comm& c) { lab->run(c, cfg); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("divide evenly"), std::string::npos) << r.error;
}

// --slow-rank R:FACTOR: the straggler's compute spans last at least FACTOR times the work
// inside them (sleep never ends early), the other ranks' spans are not stretched at all.
TEST(DdpLab, SlowRankStretchesOnlyItsComputeSpans) {
  LabConfig cfg;
  cfg.slow_rank = 1;
  cfg.slow_factor = 3.0;
  Trace trace(2);
  std::vector<double> work_ns(2);
  test::run_ranks(
      2,
      [&](Comm& c) {
        {
          ComputeSpan span(c, cfg, Pass::forward);
          const auto t0 = std::chrono::steady_clock::now();  // inside the span: a lower bound on what it stretches
          volatile double x = 0;
          for (int i = 0; i < 2000000; ++i) x = x + 1e-9 * i;
          work_ns[std::size_t(c.rank())] = double((std::chrono::steady_clock::now() - t0).count());
        }
      },
      &trace);
  for (int r = 0; r < 2; ++r) {
    const EventLog& log = trace.log(r, kStreamMain);
    ASSERT_EQ(log.size(), 1u);
    const double span = double(log[0].end_ns - log[0].begin_ns), work = work_ns[std::size_t(r)];
    if (r == 1)
      EXPECT_GE(span, 0.99 * 3.0 * work) << "straggler span " << span << " ns, work " << work << " ns";
    else
      EXPECT_LT(span, 2.0 * work + 50e6) << "rank 0 must not be slowed: span " << span << " ns, work " << work << " ns";
  }
}

// Mixed precision: every variant on 1, 2 and 4 ranks, bf16 and fp16 weights and gradients.
// Ranks agree exactly; master weights stay within the stated tolerance of one rank's and
// the averaged first-step gradients within 2^-6 of its (the lab checks both; the gradient
// check is the one that catches an averaging mistake, which AdamW's updates hide); the memory is 2 + 2 + 12 = 16
// bytes/parameter; gradients travel in 2 bytes; and the loss ends within 2% of the fp32 run's.
TEST(DdpLab, MixedPrecisionMatchesOneRankAndFp32) {
  auto run = [&](int P, const std::string& precision) {
    Trace trace(P);
    return run_ddp(P,
                   {{"variant", "all"},
                    {"width", "32"},
                    {"depth", "3"},
                    {"batch", "16"},
                    {"steps", "6"},
                    {"bucket-mb", "0.002"},
                    {"precision", precision}},
                   trace);
  };
  const double fp32_loss = run(1, "fp32").find("bucketed.loss_last")->measured;
  for (const char* precision : {"bf16", "fp16"})
    for (int P : {1, 2, 4}) {
      const Report rep = run(P, precision);
      EXPECT_TRUE(rep.ok) << precision << " P=" << P << "\n" << rep.to_text();
      for (const char* v : {"naive", "flat", "bucketed", "accumulate"}) {
        const std::string n = std::string(v) + ".";
        EXPECT_EQ(rep.find(n + "weight_diff_between_ranks")->measured, 0.0) << precision << " " << v;
        std::printf("%s P=%d %s: max master weight diff vs 1 rank %.3g, step-1 gradients %.3g\n", precision, P, v,
                    rep.find(n + "weight_diff_vs_one_rank")->measured, rep.find(n + "grad_diff_vs_one_rank")->measured);
        EXPECT_EQ(rep.find(n + "model_state_bytes_per_param")->measured, 16.0) << precision << " " << v;
        const ReportRow* grads = rep.find(n + "grad_bytes");
        ASSERT_NE(grads, nullptr) << precision << " " << v;
        EXPECT_EQ(rep.find(n + "grad_bytes_reduced")->measured, grads->measured);
        const double loss = rep.find(n + "loss_last")->measured;
        EXPECT_NEAR(loss, fp32_loss, 0.02 * fp32_loss) << precision << " " << v << " P=" << P;
      }
    }
}

TEST(DdpLab, MemoryEstimateStandsBesideTheMeasuredPeak) {
  for (const char* precision : {"fp32", "bf16"}) {
    Trace trace(2);
    const Report rep = run_ddp(2,
                               {{"variant", "all"},
                                {"width", "48"},
                                {"depth", "3"},
                                {"batch", "32"},
                                {"steps", "2"},
                                {"precision", precision}},
                               trace);
    EXPECT_TRUE(rep.ok) << rep.to_text();
    for (const char* v : {"naive", "flat", "bucketed", "accumulate"}) {
      const ReportRow* row = rep.find(std::string(v) + ".memory_peak");
      ASSERT_NE(row, nullptr) << v;
      ASSERT_TRUE(row->predicted.has_value());
      EXPECT_NEAR(row->measured, *row->predicted, 0.1 * *row->predicted) << v << " " << precision;
    }
  }
}

// Each bucket's all-reduce says which bucket it is (Role::bucket, set around the learner's
// launch_ready_buckets): every bucket 0..B-1 is averaged once per step, and no other
// collective of the bucketed variant carries a bucket.
TEST(DdpLab, EveryBucketAllReduceCarriesItsBucket) {
  const int P = 2, steps = 3;
  Trace trace(P);
  const Report rep = run_ddp(P,
                             {{"variant", "bucketed"},
                              {"width", "32"},
                              {"depth", "4"},
                              {"batch", "8"},
                              {"steps", std::to_string(steps)},
                              {"bucket-mb", "0.004"}},
                             trace);
  ASSERT_TRUE(rep.ok) << rep.to_text();
  const int buckets = int(rep.find("bucketed.buckets")->measured);
  ASSERT_GT(buckets, 1);
  for (int r = 0; r < P; ++r) {
    std::map<int, int> per_bucket;
    const EventLog& comm = trace.log(r, kStreamComm);
    for (std::size_t i = 0; i < comm.size(); ++i)
      if (comm[i].kind == EventKind::collective && trace.label_role(comm[i].label).bucket >= 0)
        ++per_bucket[trace.label_role(comm[i].label).bucket];
    ASSERT_EQ(int(per_bucket.size()), buckets) << "rank " << r;
    for (const auto& [bucket, count] : per_bucket) {
      EXPECT_LT(bucket, buckets) << "rank " << r;
      EXPECT_EQ(count, 1 + steps) << "rank " << r << ", bucket " << bucket << " (a warm-up step and " << steps
                                  << " timed)";
    }
  }
}
