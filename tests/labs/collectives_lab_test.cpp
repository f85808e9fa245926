// The collectives lab: every algorithm, world size and uneven size passes its own checks,
// and the measured bytes equal the formula (ring: exactly 2(P-1)/P·N).
#include "labs/collectives/collectives_lab.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/trace/trace.h"
#include "labs/launch.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {
Report run_lab(int P, std::uint64_t bytes, std::map<std::string, std::string> opts, DType t = DType::f32) {
  LabConfig cfg;
  cfg.ranks = P;
  cfg.bytes = bytes;
  cfg.dtype = t;
  cfg.iters = 1;
  cfg.warmup = 0;
  cfg.options = std::move(opts);
  Trace trace(P);
  return test::run_lab("collectives", cfg, trace);
}
}  // namespace

TEST(CollectivesLab, EveryAlgorithmPassesOnEveryWorldSize) {
  for (int P : {1, 2, 3, 4, 5, 7, 8})
    for (std::uint64_t bytes : {std::uint64_t(4), std::uint64_t(4096), std::uint64_t(4 * 1001)}) {
      const Report r = run_lab(P, bytes, {{"algo", "all"}});
      EXPECT_TRUE(r.ok) << "P=" << P << " bytes=" << bytes << "\n" << r.to_text();
    }
}

TEST(CollectivesLab, RingSendsExactlyTheFormulasBytes) {
  for (int P : {2, 4, 8}) {
    const std::uint64_t N = 4096 * std::uint64_t(P);
    const Report r = run_lab(P, N, {{"algo", "ring"}});
    const ReportRow* row = r.find("ring.bytes_sent_per_rank");
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->measured, 2.0 * (P - 1) / P * double(N));
    EXPECT_EQ(r.find("ring.steps")->measured, 2 * (P - 1));
  }
}

TEST(CollectivesLab, IdentityAllReduceEqualsAllGatherOfReduceScatter) {
  for (const char* op : {"sum", "avg", "max"}) {
    const Report r = run_lab(5, 4 * 999, {{"algo", "ring"}, {"op", op}}, DType::f32);
    const ReportRow* row = r.find("identity.ring_pieces");
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->measured, 0) << op;
    EXPECT_TRUE(r.ok) << r.to_text();
  }
}

TEST(CollectivesLab, StandaloneRingPhasesAndTreeBroadcast) {
  for (int P : {2, 3, 6}) {
    EXPECT_TRUE(run_lab(P, 4 * 100, {{"collective", "reduce_scatter"}}).ok);
    EXPECT_TRUE(run_lab(P, 4 * 100, {{"collective", "all_gather"}}).ok);
    EXPECT_TRUE(run_lab(P, 4 * 100, {{"collective", "broadcast"}, {"algo", "tree"}}).ok);
  }
}

TEST(CollectivesLab, OtherDtypesAndOps) {
  for (DType t : {DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16})
    for (const char* op : {"sum", "min", "avg"}) {
      const Report r = run_lab(4, 8 * 64, {{"algo", "all"}, {"op", op}}, t);
      EXPECT_TRUE(r.ok) << dtype_name(t) << " " << op << "\n" << r.to_text();
    }
}

// Issue 14: the ring's phases used tags 200+s and 300+s, which overlap from 102 ranks on,
// so the distinct-tag count came out short and the lab reported FAILED. Each algorithm's
// measured steps must equal its formula's at hundreds of ranks too.
TEST(CollectivesLab, StepsAreDistinctTagsAtHundredsOfRanks) {
  for (int P : {128, 256}) {
    const Report r = run_lab(P, 4096, {{"algo", "all"}});  // 1024 elements: P divides it
    for (const char* algo : {"naive", "ring", "tree", "rhd"}) {
      const ReportRow* row = r.find(std::string(algo) + ".steps");
      ASSERT_NE(row, nullptr) << algo;
      ASSERT_TRUE(row->predicted.has_value()) << algo;
      EXPECT_EQ(row->measured, *row->predicted) << algo << " at P=" << P << ": measured " << row->measured
                                                << " distinct tags, the formula says " << *row->predicted;
    }
    EXPECT_TRUE(r.ok) << "P=" << P << "\n" << r.to_text();
  }
}

// Issue 51: the ring pipelined in slices equals one rank's exact sum on crafted inputs on
// 2–16 ranks, for any slice count (1 is the plain ring), with the ring's bytes and steps
// and 2(P-1)·S messages, all counted from the trace.
TEST(CollectivesLab, SlicedRingMatchesTheExactSumAndItsFormula) {
  for (int P : {2, 3, 4, 5, 8, 13, 16})
    for (int S : {1, 3, 8})
      for (const char* op : {"sum", "avg"}) {
        const std::uint64_t N = 4 * 64 * std::uint64_t(P);  // 64 floats per chunk: the bytes are exact
        const Report r = run_lab(P, N, {{"algo", "ring_sliced"}, {"slices", std::to_string(S)}, {"op", op}});
        const std::string w = "P=" + std::to_string(P) + " S=" + std::to_string(S) + " op=" + op;
        ASSERT_NE(r.find("ring_sliced.wrong_elements"), nullptr) << w;
        EXPECT_EQ(r.find("ring_sliced.wrong_elements")->measured, 0) << w;
        EXPECT_EQ(r.find("ring_sliced.bytes_sent_per_rank")->measured, 2.0 * (P - 1) / P * double(N)) << w;
        EXPECT_EQ(r.find("ring_sliced.steps")->measured, 2 * (P - 1)) << w;
        EXPECT_EQ(r.find("ring_sliced.messages_sent_per_rank")->measured, 2 * (P - 1) * S) << w;
        EXPECT_TRUE(r.ok) << w << "\n" << r.to_text();
      }
  // Uneven chunks and slices (1001 floats): still exact.
  for (int P : {3, 7, 16}) EXPECT_TRUE(run_lab(P, 4 * 1001, {{"algo", "ring_sliced"}, {"slices", "5"}}).ok) << P;
}

// Issue 51: NCCL's double binary tree. Each tree spans every rank with one root and
// consistent parent/child links; for P >= 4 no rank is an inner node of both trees (NCCL's
// point: the second tree's inner nodes are the first one's leaves).
TEST(DoubleTree, TwoConsistentTreesAndEveryRankALeafInOne) {
  for (int P = 2; P <= 33; ++P) {
    int inner_in_both = 0;
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      std::vector<int> parent_seen(std::size_t(P), 0);
      for (int r = 0; r < P; ++r) {
        const theory::TreeLinks l = theory::double_tree_links(P, r, t);
        roots += l.parent < 0;
        for (const int c : l.children) {
          if (c < 0) continue;
          ASSERT_LT(c, P);
          EXPECT_EQ(theory::double_tree_links(P, c, t).parent, r) << "P=" << P << " tree " << t << " child " << c;
          parent_seen[std::size_t(c)]++;
        }
      }
      EXPECT_EQ(roots, 1) << "P=" << P << " tree " << t;
      for (int r = 0; r < P; ++r)  // every rank but the root has exactly one parent
        EXPECT_EQ(parent_seen[std::size_t(r)], theory::double_tree_links(P, r, t).parent < 0 ? 0 : 1) << P << " " << r;
    }
    for (int r = 0; r < P; ++r)
      inner_in_both +=
          theory::double_tree_links(P, r, 0).child_count() > 0 && theory::double_tree_links(P, r, 1).child_count() > 0;
    if (P % 2 == 0)
      EXPECT_EQ(inner_in_both, 0) << "P=" << P;
    else
      EXPECT_LE(inner_in_both, 1) << "P=" << P;  // odd P, shifted: only rank 0 (tree 0's root) may be
  }
}

// The double-tree all-reduce equals one rank's exact sum on crafted inputs on 2–16 ranks,
// with bytes, messages and steps from the trace equal to its formula.
TEST(CollectivesLab, DoubleTreeMatchesTheExactSumAndItsFormula) {
  for (int P : {2, 3, 4, 5, 6, 8, 11, 16})
    for (int K : {1, 4})
      for (const char* op : {"sum", "avg"}) {
        const std::uint64_t N = 4 * 64 * std::uint64_t(P);
        const Report r = run_lab(P, N, {{"algo", "double_tree"}, {"slices", std::to_string(K)}, {"op", op}});
        const std::string w = "P=" + std::to_string(P) + " K=" + std::to_string(K) + " op=" + op;
        ASSERT_NE(r.find("double_tree.wrong_elements"), nullptr) << w;
        EXPECT_EQ(r.find("double_tree.wrong_elements")->measured, 0) << w;
        const theory::CommCost f = theory::double_tree_all_reduce_cost(P, double(N), K);
        EXPECT_EQ(r.find("double_tree.bytes_sent_per_rank")->measured, f.bytes_per_rank) << w;
        EXPECT_EQ(r.find("double_tree.messages_sent_per_rank")->measured, f.messages_per_rank) << w;
        EXPECT_EQ(r.find("double_tree.steps")->measured, 4 * K) << w;
        EXPECT_TRUE(r.ok) << w << "\n" << r.to_text();
      }
  for (int P : {3, 7, 16}) EXPECT_TRUE(run_lab(P, 4 * 1001, {{"algo", "double_tree"}, {"slices", "5"}}).ok) << P;
}

// Issue 51: NCCL's channels. The buffer split over C rings (or tree pairs) at once equals one
// rank's exact sum on crafted inputs on 2–8 ranks; from the trace, the ring's bytes and steps
// (the channels share their tags) in 2(P-1)·S·C messages, and the trees' bytes in C times
// the messages of one channel's formula.
TEST(CollectivesLab, ChannelsMatchTheExactSumAndTheirFormula) {
  for (int P : {2, 3, 4, 5, 8})
    for (int C : {2, 3, 4})
      for (const char* op : {"sum", "avg"}) {
        const std::uint64_t N = 4 * 64 * std::uint64_t(P) * std::uint64_t(C);  // 64 floats per channel's chunk
        const std::string w = "P=" + std::to_string(P) + " C=" + std::to_string(C) + " op=" + op;
        const int S = 3;
        const Report ring = run_lab(
            P, N,
            {{"algo", "ring_sliced"}, {"slices", std::to_string(S)}, {"channels", std::to_string(C)}, {"op", op}});
        ASSERT_NE(ring.find("ring_sliced.wrong_elements"), nullptr) << w << "\n" << ring.to_text();
        EXPECT_EQ(ring.find("ring_sliced.wrong_elements")->measured, 0) << w;
        EXPECT_EQ(ring.find("ring_sliced.bytes_sent_per_rank")->measured, 2.0 * (P - 1) / P * double(N)) << w;
        EXPECT_EQ(ring.find("ring_sliced.steps")->measured, 2 * (P - 1)) << w;
        EXPECT_EQ(ring.find("ring_sliced.messages_sent_per_rank")->measured, 2 * (P - 1) * S * C) << w;
        EXPECT_TRUE(ring.ok) << w << "\n" << ring.to_text();

        const int K = 2;
        const Report tree = run_lab(
            P, N,
            {{"algo", "double_tree"}, {"slices", std::to_string(K)}, {"channels", std::to_string(C)}, {"op", op}});
        ASSERT_NE(tree.find("double_tree.wrong_elements"), nullptr) << w;
        EXPECT_EQ(tree.find("double_tree.wrong_elements")->measured, 0) << w;
        const theory::CommCost one = theory::double_tree_all_reduce_cost(P, double(N), K);  // one channel
        EXPECT_EQ(tree.find("double_tree.bytes_sent_per_rank")->measured, one.bytes_per_rank) << w;
        EXPECT_EQ(tree.find("double_tree.messages_sent_per_rank")->measured, one.messages_per_rank * C) << w;
        EXPECT_EQ(tree.find("double_tree.steps")->measured, 4 * K) << w;
        EXPECT_TRUE(tree.ok) << w << "\n" << tree.to_text();
      }
  // Uneven parts, chunks and slices (1001 floats): still exact.
  for (int P : {3, 7})
    for (const char* algo : {"ring_sliced", "double_tree"})
      EXPECT_TRUE(run_lab(P, 4 * 1001, {{"algo", algo}, {"channels", "3"}}).ok) << P << " " << algo;
}

// The channels' α-β formula: C channels move the bytes of one (the bandwidth term stays) in
// C times fewer slices each when slices keep their size; with C = 1 it is the sliced ring's.
TEST(ChannelsFormula, OverlapsLatencyAndSharesBandwidth) {
  const theory::Link link{10e-6, 1e9};
  const int P = 4;
  const double N = 64.0 * (1 << 20);
  const theory::CommCost one = theory::ring_sliced_all_reduce_cost(P, N, 64, link);
  EXPECT_DOUBLE_EQ(one.time_s, 2 * (P - 1) * 64 * link.alpha_s + 2.0 * (P - 1) / P * N / link.beta_Bps);
  const theory::CommCost four = theory::ring_sliced_all_reduce_cost(P, N, 16, link, 4);
  EXPECT_DOUBLE_EQ(four.time_s, 2 * (P - 1) * 16 * link.alpha_s + 2.0 * (P - 1) / P * N / link.beta_Bps);
  EXPECT_EQ(four.messages_per_rank, one.messages_per_rank);
  EXPECT_EQ(four.bytes_per_rank, one.bytes_per_rank);
  // A round of C messages of b bytes: one α, C·b/β.
  EXPECT_DOUBLE_EQ(theory::channels_time(3, 1000, 4, link), 3 * (link.alpha_s + 4 * 1000 / link.beta_Bps));
}

// Issue 51: the hierarchical all-reduce on two tiers equals the exact sum and sends exactly
// its formula's bytes and steps (a step per tag per tier), on layouts of 2 to 4 nodes.
TEST(CollectivesLab, HierarchicalMatchesTheExactSumAndItsFormula) {
  for (const auto& [nodes, G] : {std::pair{2, 2}, {2, 4}, {4, 2}, {3, 3}})
    for (const char* op : {"sum", "avg"}) {
      const int P = nodes * G;
      const std::uint64_t N = 4 * 16 * std::uint64_t(P);  // chunks of whole floats on both tiers
      LabConfig cfg;
      cfg.ranks = P;
      cfg.bytes = N;
      cfg.iters = 1;
      cfg.warmup = 0;
      cfg.nodes = {nodes, G, {}};
      cfg.options = LabOptions({{"algo", "hierarchical"}, {"op", op}});
      Trace trace(P);
      const Report r = test::run_lab("collectives", cfg, trace);
      const std::string w = std::to_string(nodes) + " nodes of " + std::to_string(G) + ", " + op;
      ASSERT_NE(r.find("hierarchical.wrong_elements"), nullptr) << w << "\n" << r.to_text();
      EXPECT_EQ(r.find("hierarchical.wrong_elements")->measured, 0) << w;
      const double bytes = 2.0 * (G - 1) / G * double(N) + 2.0 * (nodes - 1) / nodes * double(N) / G;
      EXPECT_EQ(r.find("hierarchical.bytes_sent_per_rank")->measured, bytes) << w;
      EXPECT_EQ(r.find("hierarchical.steps")->measured, 2 * (G - 1) + 2 * (nodes - 1)) << w;
      EXPECT_TRUE(r.ok) << w << "\n" << r.to_text();
    }
}

TEST(CollectivesLab, HierarchicalNeedsNodes) {
  LabConfig cfg;
  cfg.ranks = 4;
  cfg.bytes = 4096;
  cfg.options = LabOptions({{"algo", "hierarchical"}});
  Trace trace(4);
  ThreadsOptions opt;
  opt.world_size = 4;
  opt.trace = &trace;
  const LabInfo* lab = find_lab("collectives");
  ASSERT_NE(lab, nullptr);
  const LabConfig full = with_defaults(*lab, cfg);
  const RunResult r = run_threads(opt, [&](Comm& c) { lab->run(c, full); });
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("--topology nodes=N,gpus=G"), std::string::npos) << r.error;
}

// Issue 51: the double tree's time on an emulated link is its formula's (the busiest rank's
// m·(α + b/β) plus the pipeline's fill, 2F chunk hops) within the tolerance docs/labs.md states,
// 0.8–1.4×. α (10 ms) dwarfs the CPU's copies, so the ratio is the schedule's: before the two
// trees stopped waiting for each other it was 2–2.7 (each rank served its two trees in turn).
TEST(CollectivesLab, DoubleTreeTimeOnAnEmulatedLinkIsItsFormulas) {
  const LabInfo& lab = *find_lab("collectives");
  for (int P : {4, 8}) {
    RunRequest request;  // as `dtlab run collectives --link-bw 1 --link-latency 10000` starts it
    request.cfg.ranks = P;
    request.cfg.bytes = 256 << 10;
    request.cfg.iters = 1;
    request.cfg.warmup = 0;
    request.cfg.repeat = 3;
    request.cfg.link = make_link("", 1.0, 10000);  // 1 GB/s, 10 ms
    request.cfg.options = {{"algo", "double_tree"}, {"slices", "2"}};
    const Launch run = launch(lab, request);
    Trace trace(P);
    ThreadsOptions opt = run.threads;
    opt.trace = &trace;
    Report r;
    ASSERT_TRUE(run_threads(opt, [&](Comm& c) {
                  Report mine = lab.run(c, run.cfg);
                  if (c.rank() == 0) r = std::move(mine);
                }).ok());
    const ReportRow* time = r.find("double_tree.time");
    ASSERT_NE(time, nullptr) << r.to_text();
    ASSERT_TRUE(time->predicted.has_value()) << r.to_text();
    const theory::CommCost f =
        theory::double_tree_all_reduce_cost(P, 256 << 10, 2, {run.cfg.link.alpha_s(), run.cfg.link.beta_Bps()});
    EXPECT_DOUBLE_EQ(*time->predicted, f.time_s);
    const double ratio = time->measured / f.time_s;
    EXPECT_GE(ratio, 0.8) << "P=" << P << " measured " << time->measured << " s, formula " << f.time_s << " s";
    EXPECT_LE(ratio, 1.4) << "P=" << P << " measured " << time->measured << " s, formula " << f.time_s << " s";
  }
}
