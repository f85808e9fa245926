// Graded tests of the collectives exercises (exercises/collectives.h).
//
// Each suite grades one exercise (the grader maps RingReduceScatter → ring_reduce_scatter).
// Inputs are crafted so every summation order gives the same bits; results are compared
// element by element with a single-process reference; the communication pattern (bytes,
// messages, neighbours, steps) is read from the trace events, so calling the library
// all_reduce instead of building the algorithm does not pass.
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "core/comm/chunking.h"
#include "core/theory/collectives.h"
#include "exercises/collectives.h"
#include "labs/collectives/crafted.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using grade::kGradedCounts;
using grade::kGradedWorldSizes;

namespace {

std::vector<float> crafted(int rank, std::size_t n) {
  std::vector<float> v(n);
  fill_crafted(v.data(), n, DType::f32, rank);
  return v;
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<double> reference(int P, std::size_t n, ReduceOp op) {
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = crafted_expected(i, P, op, DType::f32);
  return want;
}

std::size_t chunk_bytes(std::size_t n, int P, int c) { return chunk_range(n, P, mod(c, P)).count * 4; }

// "ring_all_reduce on 4 ranks, 1003 floats", with the op when it is not a sum.
std::string where(const std::string& fn, int P, std::size_t n, ReduceOp op = ReduceOp::sum) {
  const std::string name = op == ReduceOp::sum ? fn : fn + " (" + std::string(reduce_op_name(op)) + ")";
  return grade::on_case(name, P, n);
}
std::string rank_of(const std::string& where, int r) { return where + ", rank " + std::to_string(r); }

// Runs an in-place all-reduce exercise everywhere and checks every rank's result.
grade::GradedRun all_reduce_everywhere(const std::string& name, int P, std::size_t n, ReduceOp op,
                                       const std::function<void(Comm&, ex::BufferView, ReduceOp)>& fn) {
  std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
  grade::GradedRun run = grade::run_graded(P, [&](Comm& c) {
    std::vector<float> v = crafted(c.rank(), n);
    fn(c, {v.data(), n, DType::f32}, op);
    out[std::size_t(c.rank())] = v;
  });
  if (run.error.empty()) {
    const auto want = reference(P, n, op);
    for (int r = 0; r < P; ++r)
      grade::expect_same(as_double(out[std::size_t(r)]), want, rank_of(where(name, P, n, op), r));
  }
  return run;
}

}  // namespace

// ---- exercise 0: naive ---------------------------------------------------------------

TEST(NaiveAllReduce, MatchesReferenceAndGoesThroughRankZero) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const std::string w = where("naive_all_reduce", P, n);
      const auto run = all_reduce_everywhere("naive_all_reduce", P, n, ReduceOp::sum, ex::naive_all_reduce);
      DTL_ASSERT_RAN(run, w);
      const double rank0 = run.ranks[0].bytes_sent, want0 = double((P - 1) * n * 4);
      DTL_GRADE_EXPECT(rank0 == want0) << w << ": rank 0 sent " << rank0 << " bytes, expected " << want0
                                       << " ((P-1)·N: the result, once to every other rank)";
      for (int r = 1; r < P; ++r) {
        const auto& p = run.ranks[std::size_t(r)];
        DTL_GRADE_EXPECT(p.sent_to == std::set<int>{0}) << rank_of(w, r) << ": sends to ranks other than 0";
        DTL_GRADE_EXPECT(p.bytes_sent == double(n * 4))
            << rank_of(w, r) << ": sent " << p.bytes_sent << " bytes, expected " << n * 4 << " (its buffer, once)";
      }
    }
}

TEST(NaiveAllReduce, AveragesOnce) {
  const auto run = all_reduce_everywhere("naive_all_reduce", 5, 100, ReduceOp::avg, ex::naive_all_reduce);
  DTL_ASSERT_RAN(run, where("naive_all_reduce", 5, 100, ReduceOp::avg));
}

// ---- exercise 1: ring reduce-scatter ---------------------------------------------------

// Every op the labs pass. avg is combined as a sum and left undivided: the caller divides
// (dividing here too is the mistake that passed this grader and failed the lab).
TEST(RingReduceScatter, OwnChunkHoldsTheFullReduction) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::avg})
    for (int P : kGradedWorldSizes)
      for (std::size_t n : kGradedCounts) {
        const std::string w = where("ring_reduce_scatter", P, n, op);
        std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
        const auto run = grade::run_graded(P, [&](Comm& c) {
          std::vector<float> v = crafted(c.rank(), n);
          ex::ring_reduce_scatter(c, {v.data(), n, DType::f32}, op);
          out[std::size_t(c.rank())] = v;
        });
        DTL_ASSERT_RAN(run, w);
        const auto want = reference(P, n, op == ReduceOp::avg ? ReduceOp::sum : op);  // avg: the sum, not yet divided
        for (int r = 0; r < P; ++r) {
          const ChunkRange mine = chunk_range(n, P, r);
          const auto from = std::ptrdiff_t(mine.offset), to = std::ptrdiff_t(mine.offset + mine.count);
          std::vector<double> got(out[std::size_t(r)].begin() + from, out[std::size_t(r)].begin() + to);
          std::vector<double> ref(want.begin() + from, want.begin() + to);
          grade::expect_same(got, ref,
                             rank_of(w, r) + ", its own chunk " + std::to_string(r) + " (elements from " +
                                 std::to_string(mine.offset) + ")");
        }
      }
}

TEST(RingReduceScatter, SendsEveryChunkButItsOwnOnlyToTheRight) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const std::string w = where("ring_reduce_scatter", P, n);
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v = crafted(c.rank(), n);
        ex::ring_reduce_scatter(c, {v.data(), n, DType::f32}, ReduceOp::sum);
      });
      DTL_ASSERT_RAN(run, w);
      for (int r = 0; r < P; ++r) {
        const auto& p = run.ranks[std::size_t(r)];
        const double want = double(n * 4 - chunk_bytes(n, P, r));
        DTL_GRADE_EXPECT(p.bytes_sent == want) << rank_of(w, r) << ": sent " << p.bytes_sent << " bytes, expected "
                                               << want << " (every chunk but its own, once)";
        DTL_GRADE_EXPECT(p.messages_sent == P - 1)
            << rank_of(w, r) << ": sent " << p.messages_sent << " messages, expected " << P - 1 << " (one per step)";
        DTL_GRADE_EXPECT(p.sent_to == std::set<int>{mod(r + 1, P)})
            << rank_of(w, r) << ": sends to ranks other than its right neighbour " << mod(r + 1, P);
        DTL_GRADE_EXPECT(p.collectives.empty()) << w << ": calls a library collective; use point-to-point messages";
      }
    }
}

// ---- exercise 2: ring all-gather ------------------------------------------------------

TEST(RingAllGather, EveryRankEndsWithEveryChunk) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const std::string w = where("ring_all_gather", P, n);
      std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v(n, -1000.0f);  // only my own chunk is valid at the start
        const ChunkRange mine = chunk_range(n, c.size(), c.rank());
        for (std::size_t i = mine.offset; i < mine.offset + mine.count; ++i) v[i] = float(crafted_value(c.rank(), i));
        ex::ring_all_gather(c, {v.data(), n, DType::f32});
        out[std::size_t(c.rank())] = v;
      });
      DTL_ASSERT_RAN(run, w);
      std::vector<double> want(n);
      for (int c = 0; c < P; ++c) {
        const ChunkRange cr = chunk_range(n, P, c);
        for (std::size_t i = cr.offset; i < cr.offset + cr.count; ++i) want[i] = crafted_value(c, i);
      }
      for (int r = 0; r < P; ++r) {
        grade::expect_same(as_double(out[std::size_t(r)]), want, rank_of(w, r));
        const auto& p = run.ranks[std::size_t(r)];
        const double bytes = double(n * 4 - chunk_bytes(n, P, r + 1));
        DTL_GRADE_EXPECT(p.bytes_sent == bytes) << rank_of(w, r) << ": sent " << p.bytes_sent << " bytes, expected "
                                                << bytes << " (every chunk but the right neighbour's, once)";
        DTL_GRADE_EXPECT(p.sent_to == std::set<int>{mod(r + 1, P)})
            << rank_of(w, r) << ": sends to ranks other than its right neighbour " << mod(r + 1, P);
      }
    }
}

// ---- exercise 3: ring all-reduce -----------------------------------------------------

TEST(RingAllReduce, MatchesReferenceBitForBit) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max})
        DTL_ASSERT_RAN(all_reduce_everywhere("ring_all_reduce", P, n, op, ex::ring_all_reduce),
                       where("ring_all_reduce", P, n, op));
}

TEST(RingAllReduce, SendsTwoPMinusOneOverPTimesNInTwoPMinusOneSteps) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const std::string w = where("ring_all_reduce", P, n);
      const auto run = all_reduce_everywhere("ring_all_reduce", P, n, ReduceOp::sum, ex::ring_all_reduce);
      DTL_ASSERT_RAN(run, w);
      for (int r = 0; r < P; ++r) {
        const auto& p = run.ranks[std::size_t(r)];
        // 2N - |chunk r| - |chunk r+1|; with P | n this is exactly 2(P-1)/P · N.
        const double bytes = double(2 * n * 4 - chunk_bytes(n, P, r) - chunk_bytes(n, P, r + 1));
        DTL_GRADE_EXPECT(p.bytes_sent == bytes) << rank_of(w, r) << ": sent " << p.bytes_sent << " bytes, expected "
                                                << bytes << " (2(P-1)/P·N, with chunks of uneven size)";
        DTL_GRADE_EXPECT(p.messages_sent == 2 * (P - 1)) << rank_of(w, r) << ": sent " << p.messages_sent
                                                         << " messages, expected " << 2 * (P - 1) << " (2(P-1) steps)";
        DTL_GRADE_EXPECT(int(p.tags.size()) == 2 * (P - 1))
            << rank_of(w, r) << ": used " << p.tags.size() << " tags, expected " << 2 * (P - 1)
            << " (one per step: kTagRingReduceScatter + s, kTagRingAllGather + s)";
        DTL_GRADE_EXPECT(p.sent_to == std::set<int>{mod(r + 1, P)})
            << rank_of(w, r) << ": sends to ranks other than its right neighbour " << mod(r + 1, P);
        DTL_GRADE_EXPECT(p.collectives.empty()) << w << ": calls a library collective; build it from send and recv";
      }
    }
}

TEST(RingAllReduce, AverageIsDividedOnce) {
  DTL_ASSERT_RAN(all_reduce_everywhere("ring_all_reduce", 4, 1003, ReduceOp::avg, ex::ring_all_reduce),
                 where("ring_all_reduce", 4, 1003, ReduceOp::avg));
}

// ---- exercise 4: AllReduce == AllGather ∘ ReduceScatter -------------------------------

TEST(AllReduceByReduceScatterAllGather, SameBitsAsLibraryAllReduceOnRandomInput) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const std::string w = where("all_reduce_by_reduce_scatter_all_gather", P, n) + " of random values";
      std::vector<std::string> differing(static_cast<std::size_t>(P));
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::mt19937 rng(7u * unsigned(c.rank()) + 1u);
        std::uniform_real_distribution<float> dist(-1, 1);
        std::vector<float> a(n), b;
        for (auto& x : a) x = dist(rng);
        b = a;
        ex::all_reduce_by_reduce_scatter_all_gather(c, {a.data(), n, DType::f32}, ReduceOp::sum);
        c.all_reduce(b.data(), b.data(), n, DType::f32, ReduceOp::sum);
        if (std::memcmp(a.data(), b.data(), n * 4) != 0)
          differing[std::size_t(c.rank())] = grade::first_difference(as_double(a), as_double(b));
      });
      DTL_ASSERT_RAN(run, w);
      for (int r = 0; r < P; ++r)
        DTL_GRADE_EXPECT(differing[std::size_t(r)].empty())
            << rank_of(w, r) << ": " << differing[std::size_t(r)] << " (comm.all_reduce's bits)";
      const auto& names = run.ranks[0].collectives;
      const auto calls = [&](const char* name) { return std::count(names.begin(), names.end(), name); };
      DTL_GRADE_EXPECT(calls("reduce_scatter") > 0) << w << ": never calls comm.reduce_scatter";
      DTL_GRADE_EXPECT(calls("all_gather") > 0) << w << ": never calls comm.all_gather";
      DTL_GRADE_EXPECT(calls("all_reduce") == 1) << w << ": calls comm.all_reduce itself (only the reference may)";
    }
}

// ---- exercise 5: binomial trees ---------------------------------------------------------

namespace {
// Children of relative rank vr in a binomial broadcast over P ranks.
int children(int vr, int P) {
  int limit = 1;
  while (limit < P) limit <<= 1;
  const int low = vr == 0 ? limit : (vr & -vr);
  int n = 0;
  for (int m = low >> 1; m > 0; m >>= 1) n += vr + m < P;
  return n;
}
}  // namespace

TEST(TreeBroadcast, EveryRankGetsTheRootsDataInLogSteps) {
  for (int P : kGradedWorldSizes)
    for (int root : {0, P - 1}) {
      const std::size_t n = 40;
      const std::string w = where("tree_broadcast", P, n) + " from root " + std::to_string(root);
      std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v = c.rank() == root ? crafted(root, n) : std::vector<float>(n, 0.0f);
        ex::tree_broadcast(c, {v.data(), n, DType::f32}, root);
        out[std::size_t(c.rank())] = v;
      });
      DTL_ASSERT_RAN(run, w);
      for (int r = 0; r < P; ++r) {
        grade::expect_same(as_double(out[std::size_t(r)]), as_double(crafted(root, n)), rank_of(w, r));
        const int vr = mod(r - root, P), sent = run.ranks[std::size_t(r)].messages_sent;
        DTL_GRADE_EXPECT(sent == children(vr, P)) << rank_of(w, r) << " (relative rank " << vr << "): sent " << sent
                                                  << " messages, expected " << children(vr, P) << " (one per child)";
      }
    }
}

TEST(TreeAllReduce, MatchesReferenceWithBinomialTraffic) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const std::string w = where("tree_all_reduce", P, n);
      const auto run = all_reduce_everywhere("tree_all_reduce", P, n, ReduceOp::sum, ex::tree_all_reduce);
      DTL_ASSERT_RAN(run, w);
      for (int r = 0; r < P; ++r) {
        const int want = (r == 0 ? 0 : 1) + children(r, P), sent = run.ranks[std::size_t(r)].messages_sent;
        DTL_GRADE_EXPECT(sent == want) << rank_of(w, r) << ": sent " << sent << " messages, expected " << want
                                       << " (one to its parent, one per child)";
      }
      const double bytes = double(theory::ceil_log2(P) * n * 4);
      DTL_GRADE_EXPECT(run.ranks[0].bytes_sent == bytes) << rank_of(w, 0) << ": sent " << run.ranks[0].bytes_sent
                                                         << " bytes, expected " << bytes << " (ceil(log2 P)·N)";
    }
}

// ---- exercise 6: recursive halving-doubling ------------------------------------------

TEST(RhdAllReduce, MatchesReferenceForAnyWorldSize) {
  for (int P : {2, 3, 4, 5, 6, 7, 8})
    for (std::size_t n : kGradedCounts)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg})
        DTL_ASSERT_RAN(all_reduce_everywhere("rhd_all_reduce", P, n, op, ex::rhd_all_reduce),
                       where("rhd_all_reduce", P, n, op));
}

TEST(RhdAllReduce, PowerOfTwoUsesLogSteps) {
  for (int P : {2, 4, 8}) {
    const std::size_t n = 64 * std::size_t(P);
    const std::string w = where("rhd_all_reduce", P, n);
    const auto run = all_reduce_everywhere("rhd_all_reduce", P, n, ReduceOp::sum, ex::rhd_all_reduce);
    DTL_ASSERT_RAN(run, w);
    const int log2p = theory::ceil_log2(P);
    for (int r = 0; r < P; ++r) {
      const auto& p = run.ranks[std::size_t(r)];
      const double bytes = 2.0 * (P - 1) / P * double(n * 4);
      DTL_GRADE_EXPECT(p.bytes_sent == bytes)
          << rank_of(w, r) << ": sent " << p.bytes_sent << " bytes, expected " << bytes << " (2(P-1)/P·N, as the ring)";
      DTL_GRADE_EXPECT(p.messages_sent == 2 * log2p) << rank_of(w, r) << ": sent " << p.messages_sent
                                                     << " messages, expected " << 2 * log2p << " (2·log2 P steps)";
      std::set<int> partners;
      for (int m = 1; m < P; m <<= 1) partners.insert(r ^ m);
      DTL_GRADE_EXPECT(p.sent_to == partners) << rank_of(w, r) << ": sends to ranks other than rank XOR 2^k";
    }
  }
}

// ---- exercise 7: the cost calculator ---------------------------------------------------

TEST(AllReduceCost, AgreesWithTheory) {
  struct Q {
    double params, bpp;
    int gpus;
    double bw, lat_us, compute;
  };
  // The curriculum's questions: 7B fp16 on 8 GPUs over NVLink (600 GB/s); 200 MB on 16
  // GPUs at 100 GB/s; plus latency-bound and single-GPU cases.
  for (const Q& q : {Q{7e9, 2, 8, 600, 0, 0.5}, Q{100e6, 2, 16, 100, 0, 0.01}, Q{1e6, 4, 64, 25, 5, 0.001},
                     Q{1e9, 2, 1, 50, 10, 1.0}}) {
    std::ostringstream w;
    w << "all_reduce_cost for " << q.params << " parameters of " << q.bpp << " bytes on " << q.gpus << " GPUs at "
      << q.bw << " GB/s, " << q.lat_us << " us, " << q.compute << " s of compute";
    ex::AllReduceAnswer a;
    try {
      a = ex::all_reduce_cost({q.params, q.bpp, q.gpus, q.bw, q.lat_us, q.compute});
    } catch (const std::exception& e) { FAIL() << w.str() << ": " << e.what(); }
    const double bytes = q.params * q.bpp;
    const theory::CommCost c =
        theory::all_reduce_cost(AlgorithmKind::ring, q.gpus, bytes, {q.lat_us * 1e-6, q.bw * 1e9});
    const double eff = theory::comm_efficiency(q.compute, c.time_s);
    DTL_GRADE_EXPECT(std::fabs(a.bytes_sent_per_gpu - c.bytes_per_rank) <= 1e-9 * bytes + 1e-9)
        << w.str() << ": bytes_sent_per_gpu is " << a.bytes_sent_per_gpu << ", expected " << c.bytes_per_rank;
    DTL_GRADE_EXPECT(std::fabs(a.time_s - c.time_s) <= 1e-9 * c.time_s + 1e-15)
        << w.str() << ": time_s is " << a.time_s << ", expected " << c.time_s;
    DTL_GRADE_EXPECT(std::fabs(a.efficiency - eff) <= 1e-9)
        << w.str() << ": efficiency is " << a.efficiency << ", expected " << eff;
  }
  // The curriculum's 7B example: about 41 ms per all-reduce.
  const double t = ex::all_reduce_cost({7e9, 2, 8, 600, 0, 0}).time_s;
  DTL_GRADE_EXPECT(std::fabs(t - 0.0408) <= 5e-4)
      << "all_reduce_cost for 7e9 parameters of 2 bytes on 8 GPUs at 600 GB/s: time_s is " << t
      << ", expected about 0.0408";
}

// ---- exercise 8: NCCL's double binary tree ------------------------------------------------

// Every rank's links in both trees equal NCCL's (core/theory's construction, after
// src/graph/trees.cc), and the trees are trees: one root, each other rank one parent that
// names it as a child, every rank a leaf in one tree and inner in the other for even P.
TEST(DoubleBinaryTree, EveryRanksParentAndChildrenAsNcclBuildsThem) {
  for (int P = 1; P <= 40; ++P)
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int r = 0; r < P; ++r) {
        theory::TreeLinks got;
        try {
          got = ex::double_binary_tree(P, r, t);
        } catch (const std::exception& e) {
          FAIL() << "double_binary_tree(" << P << ", " << r << ", " << t << "): " << e.what();
        }
        const theory::TreeLinks want = theory::double_tree_links(P, r, t);
        DTL_GRADE_EXPECT(got.parent == want.parent && got.children[0] == want.children[0] &&
                         got.children[1] == want.children[1])
            << "double_binary_tree(" << P << ", " << r << ", " << t << ") is parent " << got.parent << ", children "
            << got.children[0] << " " << got.children[1] << "; expected parent " << want.parent << ", children "
            << want.children[0] << " " << want.children[1];
        roots += got.parent < 0;
      }
      DTL_GRADE_EXPECT(roots == 1) << "tree " << t << " of " << P << " ranks has " << roots << " roots, expected 1";
    }
}

// ---- exercise 9: the hierarchical all-reduce of two tiers -------------------------------

namespace {

// Two tiers of `nodes` nodes × G ranks: every rank's result against the one-process
// reference, its bytes against the two rings' (2N − its two chunks inside the node, the same
// over its chunk on the rail) and its peers: only its right neighbours in the node and on the rail.
void grade_hierarchical(int nodes, int G, std::size_t n, ReduceOp op) {
  const int P = nodes * G;
  const std::string w = where("hierarchical_all_reduce", P, n, op) + " (" + std::to_string(nodes) + " nodes of " +
                        std::to_string(G) + ")";
  const auto run =
      all_reduce_everywhere("hierarchical_all_reduce", P, n, op, [G](Comm& c, ex::BufferView b, ReduceOp o) {
        const int r = c.rank();
        const std::unique_ptr<Comm> node = c.split(r / G, r), rail = c.split(r % G, r);
        ex::hierarchical_all_reduce(*node, *rail, b, o);
      });
  DTL_ASSERT_RAN(run, w);
  for (int r = 0; r < P; ++r) {
    const int l = r % G, k = r / G;
    const std::size_t chunk = chunk_range(n, G, l).count;
    const double inside = double(2 * n * 4 - chunk_bytes(n, G, l) - chunk_bytes(n, G, l + 1));
    const double between = double(2 * chunk * 4 - chunk_bytes(chunk, nodes, k) - chunk_bytes(chunk, nodes, k + 1));
    const auto& p = run.ranks[std::size_t(r)];
    DTL_GRADE_EXPECT(p.bytes_sent == inside + between)
        << rank_of(w, r) << ": sent " << p.bytes_sent << " bytes, expected " << inside + between << " (" << inside
        << " inside the node: 2(G-1)/G·N; " << between << " between nodes: 2(n-1)/n of its chunk N/G)";
    std::set<int> peers;
    if (G > 1) peers.insert(k * G + mod(l + 1, G));
    if (nodes > 1) peers.insert(mod(k + 1, nodes) * G + l);
    std::ostringstream want;
    for (int q : peers) want << " " << q;
    DTL_GRADE_EXPECT(p.sent_to == peers) << rank_of(w, r) << ": sends to ranks other than its right neighbours in the "
                                         << "node and on its rail (" << want.str() << " )";
  }
}

}  // namespace

TEST(HierarchicalAllReduce, EqualsOneRankAndCrossesNodesOnlyWithItsChunk) {
  for (const auto& [nodes, G] : {std::pair{2, 2}, {2, 3}, {3, 2}, {2, 4}})
    for (std::size_t n : kGradedCounts) grade_hierarchical(nodes, G, n, ReduceOp::sum);
}

TEST(HierarchicalAllReduce, AverageIsDividedOnceByEveryRank) {
  grade_hierarchical(2, 3, 1003, ReduceOp::avg);
  grade_hierarchical(3, 2, 40, ReduceOp::max);
}
