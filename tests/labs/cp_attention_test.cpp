// Context parallelism's core (labs/context_parallel/), held to an independent float64
// reference of causal attention written here from its formula:
//   (a) blockwise forward, key chunks merged in any order, equals full attention; a block
//       wholly in the queries' future adds nothing and makes no NaN
//   (b) blockwise backward equals the reference's gradients (and the reference's backward
//       equals finite differences of its forward on a tiny case)
//   (c) contiguous and zig-zag partitions: every position once, pairs summing to S(S+1)/2,
//       zig-zag balanced, bad lengths and head counts usage errors
//   (d) ring, all-gather and Ulysses on 2 and 4 thread ranks, both partitions: the output
//       and dQ/dK/dV equal a one-rank run, and the bytes each rank sent, read from the trace,
//       equal cp_bytes_per_rank exactly
#include "labs/context_parallel/cp_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/trace/trace.h"
#include "labs/context_parallel/cp_exchange.h"
#include "labs/context_parallel/cp_partition.h"
#include "tests/test_util.h"

using namespace dtl;
using namespace dtl::cp;

namespace {

using Shape = kernels::AttentionShape;

// ---- the float64 reference: qkv rows s·B + b = [Q of every head | K | V] ----

double q_at(const std::vector<double>& qkv, const Shape& a, int s, int b, int part, int h, int f) {
  const int w = a.heads * a.head_dim;
  return qkv[std::size_t((s * a.batch + b) * 3 * w + part * w + h * a.head_dim + f)];
}

// softmax over keys 0..i of q_i·k_j/√d, for (b, h, i): p[j]
std::vector<double> ref_probs(const std::vector<double>& qkv, const Shape& a, int b, int h, int i) {
  std::vector<double> p(std::size_t(i + 1));
  double top = -INFINITY, sum = 0;
  for (int j = 0; j <= i; ++j) {
    double dot = 0;
    for (int f = 0; f < a.head_dim; ++f) dot += q_at(qkv, a, i, b, 0, h, f) * q_at(qkv, a, j, b, 1, h, f);
    p[std::size_t(j)] = dot / std::sqrt(double(a.head_dim));
    top = std::max(top, p[std::size_t(j)]);
  }
  for (double& x : p) sum += (x = std::exp(x - top));
  for (double& x : p) x /= sum;
  return p;
}

// out [S·B × A·d]: out_i = Σ_{j ≤ i} p_j·v_j
std::vector<double> ref_forward(const std::vector<double>& qkv, const Shape& a) {
  const int w = a.heads * a.head_dim;
  std::vector<double> out(std::size_t(a.seq * a.batch * w), 0.0);
  for (int b = 0; b < a.batch; ++b)
    for (int h = 0; h < a.heads; ++h)
      for (int i = 0; i < a.seq; ++i) {
        const std::vector<double> p = ref_probs(qkv, a, b, h, i);
        for (int j = 0; j <= i; ++j)
          for (int f = 0; f < a.head_dim; ++f)
            out[std::size_t((i * a.batch + b) * w + h * a.head_dim + f)] +=
                p[std::size_t(j)] * q_at(qkv, a, j, b, 2, h, f);
      }
  return out;
}

// dqkv of Σ out∘dout: dp_j = dout·v_j, ds_j = p_j·(dp_j − Σ_k p_k·dp_k), dq += ds_j·k_j/√d,
// dk_j += ds_j·q/√d, dv_j += p_j·dout (softmax's backward in its own form, not FA-2's D).
std::vector<double> ref_backward(const std::vector<double>& qkv, const std::vector<double>& dout, const Shape& a) {
  const int w = a.heads * a.head_dim, d = a.head_dim;
  const double scale = 1 / std::sqrt(double(d));
  std::vector<double> g(qkv.size(), 0.0);
  auto at = [&](int s, int b, int part, int h) { return std::size_t((s * a.batch + b) * 3 * w + part * w + h * d); };
  for (int b = 0; b < a.batch; ++b)
    for (int h = 0; h < a.heads; ++h)
      for (int i = 0; i < a.seq; ++i) {
        const std::vector<double> p = ref_probs(qkv, a, b, h, i);
        const double* dy = dout.data() + std::size_t((i * a.batch + b) * w + h * d);
        std::vector<double> dp(p.size(), 0.0);
        double pdp = 0;
        for (int j = 0; j <= i; ++j) {
          for (int f = 0; f < d; ++f) dp[std::size_t(j)] += dy[f] * qkv[at(j, b, 2, h) + std::size_t(f)];
          pdp += p[std::size_t(j)] * dp[std::size_t(j)];
        }
        for (int j = 0; j <= i; ++j) {
          const double ds = p[std::size_t(j)] * (dp[std::size_t(j)] - pdp);
          for (int f = 0; f < d; ++f) {
            g[at(i, b, 0, h) + std::size_t(f)] += ds * qkv[at(j, b, 1, h) + std::size_t(f)] * scale;
            g[at(j, b, 1, h) + std::size_t(f)] += ds * qkv[at(i, b, 0, h) + std::size_t(f)] * scale;
            g[at(j, b, 2, h) + std::size_t(f)] += p[std::size_t(j)] * dy[f];
          }
        }
      }
  return g;
}

// ---- helpers ----

std::vector<float> random_floats(std::size_t n, unsigned seed, float range = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// max |got − want| / max |want|: the largest difference relative to the tensor's scale.
template <class A, class B>
double rel_diff(const std::vector<A>& got, const std::vector<B>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double g = double(got[i]), w = double(want[i]);
    diff = std::isfinite(g) ? std::max(diff, std::fabs(g - w)) : INFINITY;
    scale = std::max(scale, std::fabs(w));
  }
  return diff / std::max(scale, 1e-30);
}

// Contiguous position chunks of the whole sequence, every `len` positions.
std::vector<std::vector<int>> chunks_of(int seq, int len) {
  std::vector<std::vector<int>> c(std::size_t(seq / len));
  for (int p = 0; p < seq; ++p) c[std::size_t(p / len)].push_back(p);
  return c;
}

const Shape kShape{.seq = 16, .batch = 2, .heads = 2, .head_dim = 8};

}  // namespace

namespace {

// Q (part 0), K (1) or V (2) of a contiguous chunk of positions, read in place from the
// whole sequence's qkv rows.
CpRows part_rows(const std::vector<float>& qkv, const Shape& a, const std::vector<int>& pos, int part) {
  const int w = a.heads * a.head_dim;
  return {qkv.data() + std::size_t((pos[0] * a.batch * 3 + part) * w), 3 * w, pos.data(), int(pos.size())};
}

CpShape heads_of(const Shape& a) { return {a.batch, a.heads, a.head_dim}; }

// The whole sequence's queries against the key chunks in `order`, merged and finalized.
std::vector<float> merged_forward(const std::vector<float>& qkv, const Shape& a,
                                  const std::vector<std::vector<int>>& keys, const std::vector<int>& order,
                                  std::vector<float>* lse_out = nullptr) {
  const CpShape s = heads_of(a);
  const std::vector<int> all = chunks_of(a.seq, a.seq)[0];
  CpPartial acc = empty_partial(s, a.seq);
  for (int c : order)
    merge_partial(acc,
                  block_forward(s, part_rows(qkv, a, all, 0), part_rows(qkv, a, keys[std::size_t(c)], 1),
                                part_rows(qkv, a, keys[std::size_t(c)], 2)),
                  s);
  std::vector<float> out(std::size_t(a.seq * a.batch * s.width())), lse(std::size_t(a.seq * a.batch * a.heads));
  finalize_partial(acc, s, out.data(), s.width(), lse.data());
  if (lse_out) *lse_out = lse;
  return out;
}

}  // namespace

// (a) Key chunks of 4 positions, merged in order, reversed and shuffled: full attention.
TEST(CpAttention, BlocksMergedInAnyOrderEqualFullAttention) {
  const Shape a = kShape;
  const std::vector<float> qkv = random_floats(std::size_t(a.seq * a.batch * 3 * a.heads * a.head_dim), 1, 1.5f);
  const std::vector<double> want = ref_forward(widen(qkv), a);
  const std::vector<std::vector<int>> keys = chunks_of(a.seq, 4);
  std::vector<int> order(keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::mt19937 gen(7);
  double worst = 0;
  for (int trial = 0; trial < 6; ++trial) {
    if (trial == 1) std::reverse(order.begin(), order.end());
    if (trial > 1) std::shuffle(order.begin(), order.end(), gen);
    worst = std::max(worst, rel_diff(merged_forward(qkv, a, keys, order), want));
  }
  std::printf("blockwise forward, 4 key chunks in 6 orders: largest difference %.2e (relative to max |out|)\n", worst);
  EXPECT_LE(worst, 1e-5);
}

// A query chunk before a key chunk: every pair masked. Its partial is the empty one, merging
// it changes nothing bit for bit, finalizing only it gives 0 and −∞ (no NaN), and its
// backward adds nothing.
TEST(CpAttention, ABlockInTheQueriesFutureAddsNothingAndNoNaN) {
  const Shape a = kShape;
  const CpShape s = heads_of(a);
  const std::vector<float> qkv = random_floats(std::size_t(a.seq * a.batch * 3 * s.width()), 2);
  const std::vector<std::vector<int>> c = chunks_of(a.seq, 4);
  const CpPartial masked =
      block_forward(s, part_rows(qkv, a, c[0], 0), part_rows(qkv, a, c[2], 1), part_rows(qkv, a, c[2], 2));
  const CpPartial empty = empty_partial(s, 4);
  EXPECT_EQ(masked.o, empty.o);
  EXPECT_EQ(masked.m, empty.m);
  EXPECT_EQ(masked.l, empty.l);
  CpPartial acc = block_forward(s, part_rows(qkv, a, c[0], 0), part_rows(qkv, a, c[0], 1), part_rows(qkv, a, c[0], 2));
  const CpPartial before = acc;
  merge_partial(acc, masked, s);
  EXPECT_EQ(acc.o, before.o);
  EXPECT_EQ(acc.l, before.l);
  CpPartial none = empty;
  merge_partial(none, masked, s);
  std::vector<float> out(std::size_t(4 * a.batch * s.width()), 1.0f), lse(std::size_t(4 * a.batch * a.heads), 1.0f);
  finalize_partial(none, s, out.data(), s.width(), lse.data());
  for (float x : out) EXPECT_EQ(x, 0.0f);
  for (float x : lse) EXPECT_TRUE(std::isinf(x) && x < 0);
  std::vector<float> dout(out.size(), 1.0f), delta(lse.size(), 0.0f),
      dq(std::size_t(4 * a.batch * 3 * s.width()), 0.0f), dkv(std::size_t(4 * a.batch * 2 * s.width()), 0.0f);
  const float finite_lse = 0.0f;  // as if the queries had seen keys elsewhere
  std::vector<float> lse0(lse.size(), finite_lse);
  block_backward(s, part_rows(qkv, a, c[0], 0), part_rows(qkv, a, c[2], 1), part_rows(qkv, a, c[2], 2),
                 CpQueryGrad{dout.data(), s.width(), lse0.data(), delta.data(), dq.data(), 3 * s.width()},
                 CpKeyGrad{dkv.data(), dkv.data() + s.width(), 2 * s.width()});
  for (float x : dq) EXPECT_EQ(x, 0.0f);
  for (float x : dkv) EXPECT_EQ(x, 0.0f);
}

namespace {

// The largest difference of part `part` (0 dQ, 1 dK, 2 dV) of dqkv rows, relative to its scale.
double part_diff(const std::vector<float>& got, const std::vector<double>& want, int w, int part) {
  std::vector<float> g;
  std::vector<double> r;
  for (std::size_t row = 0; row < got.size() / std::size_t(3 * w); ++row)
    for (int f = 0; f < w; ++f) {
      g.push_back(got[row * std::size_t(3 * w) + std::size_t(part * w + f)]);
      r.push_back(want[row * std::size_t(3 * w) + std::size_t(part * w + f)]);
    }
  return rel_diff(g, r);
}

}  // namespace

// (b) Every (query chunk, key chunk) block's backward, in shuffled order, from the merged
// forward's out and LSE: the reference's dQ, dK, dV.
TEST(CpAttention, BlockBackwardEqualsTheReferenceGradients) {
  const Shape a = kShape;
  const CpShape s = heads_of(a);
  const int w = s.width();
  const std::vector<float> qkv = random_floats(std::size_t(a.seq * a.batch * 3 * w), 3, 1.5f);
  const std::vector<float> dout = random_floats(std::size_t(a.seq * a.batch * w), 4);
  const std::vector<std::vector<int>> c = chunks_of(a.seq, 4);
  std::vector<float> lse;
  const std::vector<float> out = merged_forward(qkv, a, c, {3, 1, 0, 2}, &lse);
  const std::vector<float> delta = softmax_delta(s, a.seq, out.data(), w, dout.data(), w);
  std::vector<std::pair<int, int>> blocks;
  for (std::size_t qc = 0; qc < c.size(); ++qc)
    for (std::size_t kc = 0; kc < c.size(); ++kc) blocks.emplace_back(int(qc), int(kc));
  std::mt19937 gen(9);
  std::shuffle(blocks.begin(), blocks.end(), gen);
  std::vector<float> dqkv(qkv.size(), 0.0f);
  for (auto [qc, kc] : blocks) {
    const std::vector<int>& qp = c[std::size_t(qc)];
    const std::vector<int>& kp = c[std::size_t(kc)];
    const std::size_t qrow = std::size_t(qp[0] * a.batch), krow = std::size_t(kp[0] * a.batch);
    const CpQueryGrad g{dout.data() + qrow * std::size_t(w),      w,
                        lse.data() + qrow * std::size_t(a.heads), delta.data() + qrow * std::size_t(a.heads),
                        dqkv.data() + qrow * std::size_t(3 * w),  3 * w};
    float* dk = dqkv.data() + krow * std::size_t(3 * w) + std::size_t(w);
    block_backward(s, part_rows(qkv, a, qp, 0), part_rows(qkv, a, kp, 1), part_rows(qkv, a, kp, 2), g,
                   CpKeyGrad{dk, dk + w, 3 * w});
  }
  const std::vector<double> want = ref_backward(widen(qkv), widen(dout), a);
  const double dq = part_diff(dqkv, want, w, 0), dk = part_diff(dqkv, want, w, 1), dv = part_diff(dqkv, want, w, 2);
  std::printf("blockwise backward, 16 blocks shuffled: largest difference dQ %.2e, dK %.2e, dV %.2e\n", dq, dk, dv);
  EXPECT_LE(dq, 1e-5);
  EXPECT_LE(dk, 1e-5);
  EXPECT_LE(dv, 1e-5);
}

// The reference's backward is the gradient of Σ out ∘ G: central differences of its forward.
TEST(CpAttention, TheReferenceBackwardMatchesFiniteDifferences) {
  const Shape a{.seq = 4, .batch = 2, .heads = 2, .head_dim = 3};
  std::vector<double> qkv = widen(random_floats(std::size_t(a.seq * a.batch * 3 * a.heads * a.head_dim), 5, 1.5f));
  const std::vector<double> G = widen(random_floats(std::size_t(a.seq * a.batch * a.heads * a.head_dim), 6));
  const std::vector<double> analytic = ref_backward(qkv, G, a);
  auto loss = [&] {
    const std::vector<double> out = ref_forward(qkv, a);
    double sum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += out[i] * G[i];
    return sum;
  };
  const double h = 1e-5;
  double worst = 0, scale = 0;
  for (std::size_t e = 0; e < qkv.size(); ++e) {
    const double x = qkv[e];
    qkv[e] = x + h;
    const double up = loss();
    qkv[e] = x - h;
    const double down = loss();
    qkv[e] = x;
    worst = std::max(worst, std::fabs((up - down) / (2 * h) - analytic[e]));
    scale = std::max(scale, std::fabs(analytic[e]));
  }
  std::printf("reference backward vs central differences (%zu inputs): largest difference %.2e (max |grad| %.2f)\n",
              qkv.size(), worst, scale);
  EXPECT_GT(scale, 0.1);  // a gradient that is not all zeros
  EXPECT_LE(worst, 1e-8);
}

// (c) Both splits, several lengths and rank counts: every position on exactly one rank, in
// ascending order; the pairs sum to S(S+1)/2; contiguous rank i does i·n² + n(n+1)/2, zig-zag
// the same on every rank. A length the split cannot cut evenly is a usage error.
TEST(CpPartition, EveryPositionOnceAndPairsSumToTheTriangle) {
  for (CpSplit split : {CpSplit::contiguous, CpSplit::zigzag})
    for (int S : {16, 24, 48})
      for (int P : {1, 2, 3, 4}) {
        if (S % (split == CpSplit::zigzag ? 2 * P : P) != 0) {
          EXPECT_THROW(check_cp_split(split, S, P), UsageError) << cp_split_name(split) << " S " << S << " P " << P;
          continue;
        }
        std::vector<int> seen(std::size_t(S), 0);
        for (int r = 0; r < P; ++r) {
          const std::vector<int> pos = cp_positions(split, S, P, r);
          EXPECT_EQ(int(pos.size()), S / P);
          EXPECT_TRUE(std::is_sorted(pos.begin(), pos.end()));
          for (int p : pos) ++seen[std::size_t(p)];
        }
        for (int p = 0; p < S; ++p) EXPECT_EQ(seen[std::size_t(p)], 1) << "position " << p;
        const CpBalance bal = cp_balance(split, S, P);
        std::int64_t total = 0;
        for (std::int64_t x : bal.pairs) total += x;
        EXPECT_EQ(total, std::int64_t(S) * (S + 1) / 2) << cp_split_name(split) << " S " << S << " P " << P;
        const std::int64_t n = S / P;
        for (int i = 0; i < P; ++i) {
          const std::int64_t want = split == CpSplit::contiguous ? i * n * n + n * (n + 1) / 2 : bal.pairs[0];
          EXPECT_EQ(bal.pairs[std::size_t(i)], want) << cp_split_name(split) << " rank " << i;
        }
        EXPECT_EQ(bal.max_over_mean, split == CpSplit::zigzag ? 1.0 : bal.max_over_mean);
      }
  const CpBalance c = cp_balance(CpSplit::contiguous, 48, 4), z = cp_balance(CpSplit::zigzag, 48, 4);
  std::printf("S 48 over 4 ranks: contiguous pairs %lld %lld %lld %lld (max/mean %.3f), zig-zag %lld each (%.3f)\n",
              (long long)c.pairs[0], (long long)c.pairs[1], (long long)c.pairs[2], (long long)c.pairs[3],
              c.max_over_mean, (long long)z.pairs[0], z.max_over_mean);
  EXPECT_NEAR(c.max_over_mean, 7.0 * 12 * 12 / 2 / (48.0 * 49 / 2 / 4), 0.05);  // ≈ (2P−1)/P, the formula's
}

TEST(CpPartition, BadLengthsAndHeadCountsAreUsageErrors) {
  EXPECT_THROW(cp_positions(CpSplit::contiguous, 10, 4, 0), UsageError);
  try {
    cp_positions(CpSplit::zigzag, 12, 4, 0);  // 12 positions, 2P = 8 chunks
    ADD_FAILURE() << "12 positions in 8 zig-zag chunks should be refused";
  } catch (const UsageError& e) {
    std::printf("zigzag 12 over 4: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("divisible by 8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("16"), std::string::npos) << "names a length that works: " << e.what();
  }
  const CpLayer three_heads{Shape{.seq = 16, .batch = 1, .heads = 3, .head_dim = 4}, CpSplit::zigzag};
  EXPECT_THROW(check_cp_layer(CpAlgo::ulysses, three_heads, 2), UsageError);
  EXPECT_NO_THROW(check_cp_layer(CpAlgo::ring, three_heads, 2));
  EXPECT_NO_THROW(check_cp_layer(CpAlgo::all_gather, three_heads, 4));
}

// The byte formulas by hand, S 16, B 2, A 4, d 8 on 4 ranks: a rank's K/V chunk is
// 4 positions · 2 · 2·32 floats · 4 B = 2048 B; one Ulysses block 4 · 2 · 8 · 4 = 256 B.
TEST(CpExchange, TheByteFormulasByHand) {
  const CpLayer layer{Shape{.seq = 16, .batch = 2, .heads = 4, .head_dim = 8}, CpSplit::zigzag};
  EXPECT_EQ(cp_bytes_per_rank(CpAlgo::ring, layer, 4).forward, 3u * 2048);
  EXPECT_EQ(cp_bytes_per_rank(CpAlgo::ring, layer, 4).backward, 7u * 2048);  // K/V 3 hops, dK/dV 4
  EXPECT_EQ(cp_bytes_per_rank(CpAlgo::all_gather, layer, 4).forward, 3u * 2048);
  EXPECT_EQ(cp_bytes_per_rank(CpAlgo::all_gather, layer, 4).backward, 3u * 2048);
  EXPECT_EQ(cp_bytes_per_rank(CpAlgo::ulysses, layer, 4).forward,
            3u * 256 * 4);  // q, k, v and out: 3 blocks leave each
  EXPECT_EQ(cp_bytes_per_rank(CpAlgo::ulysses, layer, 4).backward, 3u * 256 * 4);
  for (CpAlgo algo : {CpAlgo::ring, CpAlgo::all_gather, CpAlgo::ulysses}) {
    EXPECT_EQ(cp_bytes_per_rank(algo, layer, 1).forward, 0u) << cp_algo_name(algo);
    EXPECT_EQ(cp_bytes_per_rank(algo, layer, 1).backward, 0u) << cp_algo_name(algo);
  }
}

namespace {

// Rows `pos` of [S·B × width] rows (row s·B + b) → [n·B × width], and back.
std::vector<float> rows_of(const std::vector<float>& full, int width, const std::vector<int>& pos, int B) {
  std::vector<float> local;
  for (int p : pos)
    for (int b = 0; b < B; ++b) {
      const auto from = full.begin() + std::ptrdiff_t(std::size_t(p * B + b) * std::size_t(width));
      local.insert(local.end(), from, from + width);
    }
  return local;
}
void put_rows(std::vector<float>& full, const std::vector<float>& local, int width, const std::vector<int>& pos,
              int B) {
  for (std::size_t i = 0; i < pos.size(); ++i)
    for (int b = 0; b < B; ++b)
      std::copy_n(local.begin() + std::ptrdiff_t((i * std::size_t(B) + std::size_t(b)) * std::size_t(width)), width,
                  full.begin() + std::ptrdiff_t(std::size_t(pos[i] * B + b) * std::size_t(width)));
}

struct Marks {
  std::size_t main = 0, comm = 0;
};
Marks marks_of(Comm& c) {
  return {c.trace()->log(c.global_rank(), kStreamMain).size(), c.trace()->log(c.global_rank(), kStreamComm).size()};
}

// The bytes this rank sent between two marks, from its trace: point-to-point sends as they
// are; a library collective's event records its whole buffer of P blocks (the threads
// backend), of which the P−1 that leave the rank are what a bandwidth-optimal algorithm sends.
std::uint64_t sent_between(Comm& c, Marks from, Marks to) {
  const Trace& tr = *c.trace();
  const std::uint64_t P = std::uint64_t(c.size());
  std::uint64_t sent = 0;
  const EventLog& main = tr.log(c.global_rank(), kStreamMain);
  for (std::size_t i = from.main; i < to.main; ++i)
    if (main[i].kind == EventKind::send) sent += main[i].bytes;
  const EventLog& comm = tr.log(c.global_rank(), kStreamComm);
  for (std::size_t i = from.comm; i < to.comm; ++i) {
    if (comm[i].kind != EventKind::collective) continue;
    EXPECT_EQ(comm[i].bytes % P, 0u) << "a collective of " << comm[i].bytes << " B is not P equal blocks";
    sent += comm[i].bytes / P * (P - 1);
  }
  return sent;
}

// The ring's overlap, from the trace: of the compute spans ("ring block", step t) between two
// marks, how many there were and how many began before the receive of hop t (tag base + t)
// was posted. Posting the next hop first means 0 late (the last step has no next hop).
struct RingOverlap {
  int blocks = 0, late = 0;
};
RingOverlap ring_overlap(Comm& c, Marks from, Marks to, int tag_base) {
  const EventLog& main = c.trace()->log(c.global_rank(), kStreamMain);
  RingOverlap o;
  for (std::size_t i = from.main; i < to.main; ++i) {
    if (main[i].kind != EventKind::compute) continue;
    ++o.blocks;
    if (main[i].step + 1 >= c.size()) continue;
    bool posted = false;
    for (std::size_t j = from.main; j < to.main; ++j)
      posted |= main[j].kind == EventKind::recv && main[j].tag == tag_base + main[i].step &&
                main[j].begin_ns <= main[i].begin_ns;
    o.late += posted ? 0 : 1;
  }
  return o;
}

struct CpRun {
  std::vector<float> out, dqkv;                                // the whole sequence's, gathered from the ranks
  std::vector<CpBytes> sent;                                   // per rank, measured
  std::vector<RingOverlap> forward_overlap, backward_overlap;  // per rank (ring)
};

CpRun run_cp(CpAlgo algo, CpSplit split, int P, const Shape& a, const std::vector<float>& qkv,
             const std::vector<float>& dout) {
  const int w = a.heads * a.head_dim;
  const CpLayer layer{a, split};
  CpRun run{std::vector<float>(dout.size()), std::vector<float>(qkv.size()), std::vector<CpBytes>(std::size_t(P)),
            std::vector<RingOverlap>(std::size_t(P)), std::vector<RingOverlap>(std::size_t(P))};
  Trace trace(P);
  dtl::test::run_ranks(
      P,
      [&](Comm& c) {
        const std::vector<int> pos = cp_positions(split, a.seq, P, c.rank());
        const std::vector<float> my_qkv = rows_of(qkv, 3 * w, pos, a.batch), my_dout = rows_of(dout, w, pos, a.batch);
        const Marks m0 = marks_of(c);
        const CpSaved saved = cp_attention_forward(c, algo, layer, my_qkv.data());
        const Marks m1 = marks_of(c);
        const std::vector<float> my_dqkv = cp_attention_backward(c, algo, layer, my_qkv.data(), saved, my_dout.data());
        const Marks m2 = marks_of(c);
        run.sent[std::size_t(c.rank())] = {sent_between(c, m0, m1), sent_between(c, m1, m2)};
        run.forward_overlap[std::size_t(c.rank())] = ring_overlap(c, m0, m1, kRingTagKv);
        run.backward_overlap[std::size_t(c.rank())] = ring_overlap(c, m1, m2, kRingTagKvBack);
        put_rows(run.out, saved.out, w, pos, a.batch);  // each rank its own rows: no two write the same
        put_rows(run.dqkv, my_dqkv, 3 * w, pos, a.batch);
      },
      &trace);
  return run;
}

// (d) Each algorithm, both splits, on each of `rank_counts` thread ranks: the output and dqkv
// equal one rank running the same algorithm (and the float64 reference), every rank sent
// exactly the formula's bytes forward and backward, and the ring posted each hop before the
// block it overlaps.
void check_every_algorithm(const Shape& a, std::initializer_list<int> rank_counts, unsigned seed) {
  const int w = a.heads * a.head_dim;
  const std::vector<float> qkv = random_floats(std::size_t(a.seq * a.batch * 3 * w), seed, 1.5f);
  const std::vector<float> dout = random_floats(std::size_t(a.seq * a.batch * w), seed + 1);
  const std::vector<double> want_out = ref_forward(widen(qkv), a), want_dqkv = ref_backward(widen(qkv), widen(dout), a);
  for (CpAlgo algo : {CpAlgo::ring, CpAlgo::all_gather, CpAlgo::ulysses}) {
    const CpRun one = run_cp(algo, CpSplit::contiguous, 1, a, qkv, dout);
    const double one_out = rel_diff(one.out, want_out), one_grad = rel_diff(one.dqkv, want_dqkv);
    std::printf("%-10s 1 rank: out %.2e, dqkv %.2e vs float64\n", cp_algo_name(algo), one_out, one_grad);
    EXPECT_LE(one_out, 1e-5);
    EXPECT_LE(one_grad, 1e-5);
    for (CpSplit split : {CpSplit::contiguous, CpSplit::zigzag})
      for (int P : rank_counts) {
        const CpRun run = run_cp(algo, split, P, a, qkv, dout);
        const double d_out = rel_diff(run.out, one.out), d_grad = rel_diff(run.dqkv, one.dqkv);
        const CpBytes want = cp_bytes_per_rank(algo, CpLayer{a, split}, P);
        std::printf(
            "%-10s %-10s P %d: out %.2e, dqkv %.2e vs 1 rank (%.2e, %.2e vs float64); rank 0 sent %llu B "
            "forward, %llu B backward (formula %llu, %llu)\n",
            cp_algo_name(algo), cp_split_name(split), P, d_out, d_grad, rel_diff(run.out, want_out),
            rel_diff(run.dqkv, want_dqkv), (unsigned long long)run.sent[0].forward,
            (unsigned long long)run.sent[0].backward, (unsigned long long)want.forward,
            (unsigned long long)want.backward);
        EXPECT_LE(d_out, 1e-5) << cp_algo_name(algo) << " " << cp_split_name(split) << " P " << P;
        EXPECT_LE(d_grad, 1e-5) << cp_algo_name(algo) << " " << cp_split_name(split) << " P " << P;
        EXPECT_GT(want.forward, 0u);
        for (int r = 0; r < P; ++r) {
          EXPECT_EQ(run.sent[std::size_t(r)].forward, want.forward) << cp_algo_name(algo) << " rank " << r;
          EXPECT_EQ(run.sent[std::size_t(r)].backward, want.backward) << cp_algo_name(algo) << " rank " << r;
          if (algo != CpAlgo::ring) continue;  // one block per rank per pass, nothing to overlap
          for (const RingOverlap& o : {run.forward_overlap[std::size_t(r)], run.backward_overlap[std::size_t(r)]}) {
            EXPECT_EQ(o.blocks, P) << "ring rank " << r << ": one compute span per step";
            EXPECT_EQ(o.late, 0) << "ring rank " << r << ": a block was computed before its next hop was posted";
          }
        }
      }
  }
}

}  // namespace

TEST(CpExchange, EveryAlgorithmEqualsOneRankAndSendsItsFormulasBytes) {
  check_every_algorithm(Shape{.seq = 16, .batch = 2, .heads = 4, .head_dim = 8}, {2, 4}, 11);
}

// An odd ring (3 ranks: next ≠ prev, zig-zag chunks of 2) and one sequence.
TEST(CpExchange, ThreeRanksAndOneSequence) {
  check_every_algorithm(Shape{.seq = 12, .batch = 1, .heads = 3, .head_dim = 4}, {3}, 21);
}
