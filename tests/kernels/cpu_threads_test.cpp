// The CPU kernels on several threads (kernels/cpu/cpu_threads.h): parallel_for covers each
// index once; GELU, LayerNorm, AdamW and attention give the same bits on 2 and 3 threads as
// on one (split by whole rows, elements or (batch, head) pairs, each computed by the same
// code), the linear layers' split GEMMs the same within float32 rounding.
// Also the blocked attention and the SIMD-lane LayerNorm at sizes that cross their blocks
// and lanes, against the float64 twins.
#include "kernels/cpu/cpu_threads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/transformer_kernels.h"
#include "tests/kernels/kernel_test_util.h"

using namespace dtl::kernels;

namespace {

using dtl::test::max_rel_error;
using dtl::test::random;

// n threads for the test's kernels, one again at its end (the other tests expect it). Every
// test here starts with Threads(1) at least: ctest runs each test in a process of its own,
// where OpenBLAS would otherwise start with a thread per core — threads ThreadSanitizer
// cannot see synchronize (OpenBLAS is not instrumented), so it reported a race in CI.
struct Threads {
  explicit Threads(int n) { use_cpu_threads(n); }
  ~Threads() { use_cpu_threads(1); }
};

// Each index of [0, count) visited exactly once, the parts whole grains but the last.
void expect_covered_once(std::size_t count, std::size_t grain) {
  std::vector<std::atomic<int>> seen(count);
  std::atomic<int> parts{0};
  parallel_for(count, grain, [&](std::size_t a, std::size_t b) {
    ++parts;
    if (b != count) { EXPECT_EQ((b - a) % grain, 0u) << a << ".." << b; }
    for (std::size_t i = a; i < b; ++i) ++seen[i];
  });
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i << " of " << count;
  EXPECT_LE(parts.load(), cpu_threads());
}

// Everything one GPT layer's kernels write, from fixed inputs, on the current threads.
std::vector<std::vector<float>> run_every_kernel() {
  const int B = 200, I = 96, O = 130;  // rows not a multiple of the 64-row parts
  const auto X = random(std::size_t(B) * I, 1), W = random(std::size_t(O) * I, 2, 0.1f), b = random(std::size_t(O), 3);
  const auto dY = random(std::size_t(B) * O, 4);
  std::vector<float> Y(std::size_t(B) * O), dX(std::size_t(B) * I), dW(std::size_t(O) * I), db(O + 0);
  linear_forward(X.data(), W.data(), b.data(), Y.data(), B, I, O);
  linear_backward(X.data(), W.data(), dY.data(), dX.data(), dW.data(), db.data(), B, I, O);
  std::vector<float> pre(Y.size()), act(Y.size());
  linear_gelu_forward(X.data(), W.data(), b.data(), pre.data(), act.data(), B, I, O);

  const std::size_t n = 3 * 4096 + 7;
  const auto x = random(n, 5, 2.0f), dy = random(n, 6);
  std::vector<float> g(n), dg(n), w = random(n, 7), m(n), v(n);
  gelu_forward(x.data(), g.data(), n);
  gelu_backward(x.data(), dy.data(), dg.data(), n);
  adamw_step(w.data(), dy.data(), m.data(), v.data(), n, AdamWConfig{}, 1);
  std::vector<float> sum(n);
  residual_add(x.data(), dy.data(), sum.data(), n);

  const int rows = 100, width = 300;
  const auto lx = random(std::size_t(rows) * width, 8), lw = random(std::size_t(width), 9),
             lb = random(std::size_t(width), 10);
  const auto ldy = random(std::size_t(rows) * width, 11);
  std::vector<float> ly(lx.size()), mean(rows + 0), rstd(rows + 0), ldx(lx.size()), ldw(width + 0), ldb(width + 0);
  layernorm_forward(lx.data(), lw.data(), lb.data(), ly.data(), mean.data(), rstd.data(), rows, width, 1e-5f);
  layernorm_backward(lx.data(), lw.data(), mean.data(), rstd.data(), ldy.data(), ldx.data(), ldw.data(), ldb.data(),
                     rows, width);

  const AttentionShape s{.seq = 150, .batch = 2, .heads = 3, .head_dim = 16};
  const std::size_t tokens = std::size_t(s.seq) * std::size_t(s.batch), hd = std::size_t(s.heads * s.head_dim);
  const auto qkv = random(tokens * 3 * hd, 12), dout = random(tokens * hd, 13);
  std::vector<float> out(tokens * hd), probs(std::size_t(s.batch * s.heads) * std::size_t(s.seq * s.seq)),
      dqkv(qkv.size());
  attention_forward(qkv.data(), out.data(), probs.data(), s);
  attention_backward(qkv.data(), probs.data(), dout.data(), dqkv.data(), s);
  return {Y, dX, dW, pre, act, db, g, dg, w, m, v, sum, ly, mean, rstd, ldx, ldw, ldb, out, probs, dqkv};
}

}  // namespace

TEST(CpuThreads, ParallelForVisitsEachIndexOnce) {
  for (int threads : {1, 2, 3}) {
    Threads t(threads);
    EXPECT_EQ(cpu_threads(), threads);
    for (auto [count, grain] :
         {std::pair<std::size_t, std::size_t>{0, 16}, {1, 16}, {31, 16}, {32, 16}, {1000, 64}, {1000, 1}, {7, 1}})
      expect_covered_once(count, grain);
  }
}

// Two threads of a process (ranks that are threads) calling at once: one takes the pool,
// the other runs in its own thread; both cover their range.
TEST(CpuThreads, ConcurrentCallersEachCoverTheirRange) {
  Threads t(2);
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([] {
      for (int round = 0; round < 50; ++round) expect_covered_once(5000, 64);
    });
  for (std::thread& c : callers) c.join();
}

// The GEMMs' outputs (the first five: Y, dX, dW, and the fused layer's pre and act) may
// differ in the last bits (OpenBLAS's kernel for a part can differ from the whole's:
// cpu_threads.h); the others must not.
TEST(CpuThreads, KernelsGiveTheSameBitsOnAnyNumberOfThreads) {
  const std::vector<std::vector<float>> one = [] {
    Threads t(1);
    return run_every_kernel();
  }();
  constexpr std::size_t kLinearOutputs = 5;
  for (int threads : {2, 3}) {
    Threads t(threads);
    const std::vector<std::vector<float>> many = run_every_kernel();
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t k = 0; k < kLinearOutputs; ++k) {
      std::printf("linear output %zu on %d threads: %.2e relative to one thread's\n", k, threads,
                  max_rel_error(many[k], one[k]));
      EXPECT_LT(max_rel_error(many[k], one[k]), 1e-6) << "linear output " << k << " on " << threads << " threads";
    }
    for (std::size_t k = kLinearOutputs; k < one.size(); ++k) {
      std::size_t differing = 0;
      for (std::size_t i = 0; i < one[k].size(); ++i)
        differing += std::memcmp(&one[k][i], &many[k][i], sizeof(float)) != 0;
      EXPECT_EQ(differing, 0u) << "output " << k << " on " << threads << " threads: " << differing << " of "
                               << one[k].size() << " floats differ from one thread's";
    }
  }
}

// S = 150: query blocks of 64, 64 and 22 rows; keys cut at each block's last query.
TEST(BlockedAttention, MatchesFloat64AcrossQueryBlocks) {
  Threads t(1);
  const AttentionShape s{.seq = 150, .batch = 1, .heads = 2, .head_dim = 8};
  const std::size_t tokens = std::size_t(s.seq) * std::size_t(s.batch), hd = std::size_t(s.heads * s.head_dim);
  const auto qkv = random(tokens * 3 * hd, 21), dout = random(tokens * hd, 22);
  std::vector<float> out(tokens * hd), out_ref(out.size()), probs(std::size_t(s.heads) * std::size_t(s.seq * s.seq));
  attention_forward(qkv.data(), out.data(), probs.data(), s);
  reference::attention_forward(qkv.data(), out_ref.data(), s);
  std::size_t masked_nonzero = 0;
  double worst_row_sum = 0;
  for (int h = 0; h < s.heads; ++h)
    for (int i = 0; i < s.seq; ++i) {
      const float* row = probs.data() + (std::size_t(h) * std::size_t(s.seq) + std::size_t(i)) * std::size_t(s.seq);
      double sum = 0;
      for (int j = 0; j < s.seq; ++j) {
        if (j <= i)
          sum += row[j];
        else
          masked_nonzero += row[j] != 0.0f;
      }
      worst_row_sum = std::max(worst_row_sum, std::fabs(sum - 1.0));
    }
  // Every 37th element of dqkv (coprime with a row's 48 floats: Q, K and V of both heads).
  const int every = 37;
  std::vector<float> dqkv(qkv.size()), dqkv_ref(qkv.size(), 0.0f);
  attention_backward(qkv.data(), probs.data(), dout.data(), dqkv.data(), s);
  reference::attention_backward(qkv.data(), dout.data(), dqkv_ref.data(), s, every);
  std::vector<float> sampled, sampled_ref;
  for (std::size_t k = 0; k < qkv.size(); k += every) sampled.push_back(dqkv[k]), sampled_ref.push_back(dqkv_ref[k]);
  std::printf("blocked attention, S 150: out %.2e, dqkv (%zu sampled) %.2e, |row sum - 1| %.2e\n",
              max_rel_error(out, out_ref), sampled.size(), max_rel_error(sampled, sampled_ref), worst_row_sum);
  EXPECT_LT(max_rel_error(out, out_ref), 1e-5);
  EXPECT_LT(max_rel_error(sampled, sampled_ref), 1e-4);
  EXPECT_EQ(masked_nonzero, 0u);
  EXPECT_LT(worst_row_sum, 1e-5);
}

// width 300: 18 full SIMD lane groups of 16 and a tail of 12.
TEST(LaneLayerNorm, MatchesFloat64AcrossLanesAndTail) {
  Threads t(1);
  const int rows = 6, width = 300;
  const auto x = random(std::size_t(rows) * width, 31, 3.0f), w = random(std::size_t(width), 32),
             b = random(std::size_t(width), 33), dy = random(std::size_t(rows) * width, 34);
  std::vector<float> y(x.size()), y_ref(x.size()), mean(rows), rstd(rows);
  layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, width, 1e-5f);
  reference::layernorm_forward(x.data(), w.data(), b.data(), y_ref.data(), rows, width, 1e-5f);
  std::vector<float> dx(x.size()), dw(width), db(width), dx_ref(x.size()), dw_ref(width), db_ref(width);
  layernorm_backward(x.data(), w.data(), mean.data(), rstd.data(), dy.data(), dx.data(), dw.data(), db.data(), rows,
                     width);
  reference::layernorm_backward(x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data(), rows, width,
                                1e-5f);
  std::printf("layernorm, width 300: y %.2e, dx %.2e, dw %.2e, db %.2e\n", max_rel_error(y, y_ref),
              max_rel_error(dx, dx_ref), max_rel_error(dw, dw_ref), max_rel_error(db, db_ref));
  EXPECT_LT(max_rel_error(y, y_ref), 1e-5);
  EXPECT_LT(max_rel_error(dx, dx_ref), 1e-4);
  EXPECT_LT(max_rel_error(dw, dw_ref), 1e-5);
  EXPECT_LT(max_rel_error(db, db_ref), 1e-5);
}
