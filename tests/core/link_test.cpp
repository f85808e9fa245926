// The emulated interconnect: a transfer never completes before the α-β model allows, a
// rank's concurrent sends queue on its link, collectives take at least their ring time,
// and bad link options are usage errors. (Lower bounds only: how close the emulation
// comes to the model is a benchmark's business, not a timed test's.)
#include "core/comm/link.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "core/comm/threads/universe.h"
#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/trace/trace.h"
#include "tests/test_util.h"

using namespace dtl;
using Clock = std::chrono::steady_clock;

namespace {
ThreadsOptions with_link(int P, LinkSpec link, Trace* trace = nullptr) {
  ThreadsOptions opt;
  opt.world_size = P;
  opt.link = link;
  opt.trace = trace;
  opt.timeout_s = 30;
  return opt;
}

// How long rank 1 waited for one send of `bytes` from rank 0 over `link` (events into `trace`).
double one_transfer_s(const LinkSpec& link, std::size_t bytes, Trace* trace = nullptr) {
  double elapsed = 0;
  const RunResult r = run_threads(with_link(2, link, trace), [&](Comm& c) {
    std::vector<char> buf(bytes, 1);
    c.barrier();
    const auto t0 = Clock::now();
    if (c.rank() == 0)
      c.send(buf.data(), bytes, 1, 0);
    else
      c.recv(buf.data(), bytes, 0, 0);
    if (c.rank() == 1) elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  EXPECT_TRUE(r.ok()) << r.error;
  return elapsed;
}
}  // namespace

TEST(EmulatedLink, TransferTakesAtLeastAlphaPlusBytesOverBeta) {
  const LinkSpec link{"custom", 1.0, 200};  // 1 GB/s, 200 µs
  const std::size_t bytes = 1 << 20;        // ≈ 1.05 ms on the wire
  Trace trace(2);
  const double elapsed = one_transfer_s(link, bytes, &trace);
  const double model = link.alpha_s() + double(bytes) / link.beta_Bps();
  EXPECT_GE(elapsed, model) << "the receive completed before the link could have delivered it";
  for (const Event& e : trace.snapshot()) {
    if (e.kind != EventKind::recv) continue;
    EXPECT_GE(double(e.end_ns - e.begin_ns) * 1e-9, model * 0.999);
  }
}

TEST(EmulatedLink, ConcurrentSendsOfOneRankShareItsLink) {
  const LinkSpec link{"custom", 1.0, 0};
  const std::size_t bytes = 1 << 20;
  double elapsed = 0;
  const RunResult r = run_threads(with_link(3, link), [&](Comm& c) {
    std::vector<char> buf(bytes, 1);
    c.barrier();
    const auto t0 = Clock::now();
    if (c.rank() == 0) {  // two sends at once: they queue on rank 0's outgoing direction
      Request a = c.isend(buf.data(), bytes, 1, 0), b = c.isend(buf.data(), bytes, 2, 0);
      a.wait();
      b.wait();
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } else {
      c.recv(buf.data(), bytes, 0, 0);
    }
  });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(elapsed, 2 * double(bytes) / link.beta_Bps());
}

TEST(EmulatedLink, LibraryAllReduceTakesAtLeastItsRingTime) {
  const LinkSpec link{"custom", 2.0, 50};
  const std::size_t n = 1 << 18;  // 1 MiB of floats
  double elapsed = 0;
  const RunResult r = run_threads(with_link(4, link), [&](Comm& c) {
    std::vector<float> v(n, 1.0f);
    c.barrier();
    const auto t0 = Clock::now();
    c.all_reduce(v.data(), v.data(), n, DType::f32, ReduceOp::sum);
    if (c.rank() == 0) elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_EQ(v[n - 1], 4.0f);
  });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(elapsed, theory::library_collective_time(CollectiveKind::all_reduce, 4, double(n * 4),
                                                     {link.alpha_s(), link.beta_Bps()}));
}

TEST(EmulatedLink, PresetsAndUsageErrors) {
  EXPECT_DOUBLE_EQ(find_link("pcie4").bandwidth_GBps, 32);
  EXPECT_DOUBLE_EQ(find_link("nvlink4").bandwidth_GBps, 450);
  EXPECT_DOUBLE_EQ(find_link("eth100").bandwidth_GBps, 12.5);
  EXPECT_THROW(find_link("carrier-pigeon"), UsageError);
  EXPECT_THROW(make_link("pcie4", 10, 0), UsageError);
  EXPECT_THROW(make_link("", -1, 0), UsageError);
  EXPECT_THROW(make_link("", 0, 5), UsageError);
  EXPECT_FALSE(make_link("", 0, 0).active());
  EXPECT_TRUE(make_link("", 3, 1).active());
  // --link-slowdown K: K times the latency, 1/K the bandwidth, named so reports say it.
  const LinkSpec slow = make_link("pcie4", 0, 0, 100);
  EXPECT_DOUBLE_EQ(slow.bandwidth_GBps, 0.32);
  EXPECT_DOUBLE_EQ(slow.latency_us, 500);
  EXPECT_EQ(slow.name, "pcie4/100");
  EXPECT_THROW(make_link("pcie4", 0, 0, 0.5), UsageError);
  EXPECT_THROW(make_link("", 0, 0, 10), UsageError);  // nothing to slow down
}

// ---- two tiers (--topology) -------------------------------------------------------------

TEST(TwoTiers, ParsesTheLayoutAndRefusesWhatItCannotUse) {
  const ClusterLinks c = parse_topology("nodes=2,gpus=4,intra=nvlink4,inter=ib-ndr", 10);
  EXPECT_EQ(c.layout.nodes, 2);
  EXPECT_EQ(c.layout.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(c.intra.bandwidth_GBps, 45);        // nvlink4 450 GB/s, 10× slower
  EXPECT_DOUBLE_EQ(c.layout.inter.bandwidth_GBps, 5);  // ib-ndr 50 GB/s
  EXPECT_DOUBLE_EQ(c.layout.inter.latency_us, 50);
  EXPECT_EQ(c.layout.node_of(3), 0);
  EXPECT_EQ(c.layout.node_of(4), 1);
  EXPECT_EQ(&link_between(c.intra, c.layout, 1, 3), &c.intra);
  EXPECT_EQ(&link_between(c.intra, c.layout, 3, 4), &c.layout.inter);
  const ClusterLinks grouping = parse_topology("gpus=2,nodes=3");  // any order; no links: grouping only
  EXPECT_EQ(grouping.layout.nodes * grouping.layout.gpus_per_node, 6);
  EXPECT_FALSE(grouping.intra.active());
  for (const char* bad : {"", "nodes=2", "gpus=4", "nodes=2,gpus=0", "nodes=x,gpus=2", "nodes=2,gpus=2,intra=nvlink4",
                          "nodes=2,gpus=2,inter=ib-ndr", "nodes=2,gpus=2,intra=warp,inter=ib-ndr",
                          "nodes=2,gpus=2,fast=1", "nodes=2,nodes=3,gpus=2", "nodes2,gpus=2"})
    EXPECT_THROW(parse_topology(bad), UsageError) << bad;
  EXPECT_THROW(parse_topology("nodes=2,gpus=2", 10), UsageError);  // a slowdown of no link
}

TEST(TwoTiers, CollectiveTimeIsTheTiersComposed) {
  const theory::Link intra{2e-6, 400e9}, inter{5e-6, 50e9};
  const double N = 1 << 26;
  using theory::library_collective_time;
  // One node: the intra ring; one rank per node: the inter ring.
  EXPECT_DOUBLE_EQ(theory::two_tier_collective_time(CollectiveKind::all_reduce, 1, 8, N, intra, inter),
                   library_collective_time(CollectiveKind::all_reduce, 8, N, intra));
  EXPECT_DOUBLE_EQ(theory::two_tier_collective_time(CollectiveKind::all_reduce, 4, 1, N, intra, inter),
                   library_collective_time(CollectiveKind::all_reduce, 4, N, inter));
  // 2 nodes of 4, by hand: RS inside 3α_i + 3/4·N/β_i, all-reduce of N/4 between 2α_e + N/4/β_e, AG inside.
  const double by_hand = 2 * (3 * 2e-6 + 0.75 * N / 400e9) + (2 * 5e-6 + (N / 4) / 50e9);
  EXPECT_NEAR(theory::two_tier_collective_time(CollectiveKind::all_reduce, 2, 4, N, intra, inter), by_hand, 1e-15);
  const theory::CommCost h = theory::hierarchical_all_reduce_cost(2, 4, N, intra, inter);
  EXPECT_DOUBLE_EQ(h.bytes_per_rank, 1.5 * N + 0.25 * N);  // 2·3/4·N inside + 2·1/2·N/4 between
  EXPECT_EQ(h.messages_per_rank, 8);
  EXPECT_NEAR(h.time_s, 6 * (2e-6 + N / 4 / 400e9) + 2 * (5e-6 + N / 8 / 50e9), 1e-15);
}

TEST(TwoTiers, MessagesBetweenNodesTakeTheSlowLinkAndTiersDoNotQueue) {
  NodeLayout nodes{2, 2, {"custom", 0.05, 100}};  // between nodes 50 MB/s, 100 µs: 21 ms for 1 MiB
  const LinkSpec intra{"custom", 4.0, 10};        // within a node: 0.27 ms
  ThreadsOptions opt = with_link(4, intra);
  opt.nodes = nodes;
  const std::size_t bytes = 1 << 20;
  double inside = 0, between = 0;
  const RunResult r = run_threads(opt, [&](Comm& c) {
    std::vector<char> buf(bytes, 1);
    c.barrier();
    const auto t0 = Clock::now();
    if (c.rank() == 0) {  // the slow send to node 1 (rank 2) first, then one inside node 0 (rank 1)
      Request slow = c.isend(buf.data(), bytes, 2, 0), fast = c.isend(buf.data(), bytes, 1, 0);
      fast.wait();
      inside = std::chrono::duration<double>(Clock::now() - t0).count();
      slow.wait();
      between = std::chrono::duration<double>(Clock::now() - t0).count();
    } else if (c.rank() < 3) {
      c.recv(buf.data(), bytes, 0, 0);
    }
  });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(inside, intra.alpha_s() + double(bytes) / intra.beta_Bps());
  EXPECT_GE(between, nodes.inter.alpha_s() + double(bytes) / nodes.inter.beta_Bps());
  // One queue for both would have held the fast send until the slow one was done.
  EXPECT_LT(inside, between) << "the send inside the node queued behind the one between nodes";
}

// ---- NCCL's protocols on an emulated link (--protocol) -------------------------------------

TEST(LinkProtocol, LlDoublesTheBytesAndCutsTheLatencyAsNcclsTablesSay) {
  LinkSpec nvlink = find_link("nvlink4"), nic = find_link("ib-ndr");
  const double simple_alpha = nvlink.alpha_s(), simple_beta = nvlink.beta_Bps();
  set_protocol("ll", nvlink);
  EXPECT_DOUBLE_EQ(nvlink.beta_Bps(), simple_beta / 2);            // 4 data bytes per 8-byte line
  EXPECT_NEAR(nvlink.alpha_s(), simple_alpha * 0.6 / 3.4, 1e-15);  // NCCL's ring hop, NVLink
  set_protocol("LL128", nvlink);
  EXPECT_DOUBLE_EQ(nvlink.beta_Bps(), simple_beta * 120 / 128);  // 120 data bytes per 128-byte line
  EXPECT_NEAR(nvlink.alpha_s(), simple_alpha * 1.9 / 3.4, 1e-15);
  const double nic_alpha = nic.alpha_s();
  set_protocol("Simple", nvlink, &nic);
  EXPECT_DOUBLE_EQ(nvlink.beta_Bps(), simple_beta);
  EXPECT_DOUBLE_EQ(nic.alpha_s(), nic_alpha);
  set_protocol("ll128", nvlink, &nic);
  EXPECT_NEAR(nic.alpha_s(), nic_alpha * 4.0 / 14.0, 1e-15);  // the network's hops
  LinkSpec none;
  EXPECT_THROW(set_protocol("ll", none), UsageError);
  EXPECT_THROW(set_protocol("ll64", nvlink), UsageError);
}

TEST(LinkProtocol, AnLlTransferPaysTwiceTheBytes) {
  LinkSpec link{"custom", 1.0, 100};  // 1 GB/s, 100 µs under Simple
  set_protocol("LL", link);
  const std::size_t bytes = 1 << 20;
  const double elapsed = one_transfer_s(link, bytes);
  EXPECT_GE(elapsed, 100e-6 * 0.6 / 3.4 + 2.0 * double(bytes) / 1e9);
}

// Issue 51, NCCL's channels on the emulated link, as the model's arithmetic (the end times
// schedule_transfer returns; nothing waits, so nothing here is timed): a channel is a
// connection whose messages go one after the other; two channels of one rank overlap their
// latencies and share its bandwidth. α = 100 s and bytes/β = 10 s, so the microseconds
// between the calls cannot change which term wins.
TEST(EmulatedLink, ChannelsOverlapTheirLatencyAndShareTheBandwidth) {
  const LinkSpec link{"custom", 1e-9, 100e6};  // 1 byte/s, 100 s
  threads::Universe u(with_link(2, link));
  using std::chrono::duration;
  auto seconds = [](Clock::duration d) { return duration<double>(d).count(); };
  const double alpha = 100, wire = 10;
  const auto a = u.schedule_transfer(0, 1, 10, 0);
  const auto b = u.schedule_transfer(0, 1, 10, 1);  // channel 1: its α passed while a's bytes moved
  const auto c = u.schedule_transfer(0, 1, 10, 0);  // channel 0 again: after a, α then its bytes
  EXPECT_NEAR(seconds(b - a), wire, 1e-3) << "channel 1 should wait only for channel 0's bytes, not its α";
  EXPECT_NEAR(seconds(c - a), alpha + wire, 1e-3) << "one channel's messages go one after the other";
  // One channel (every group but split_channels'): α + bytes/β each, first in first out.
  threads::Universe one(with_link(2, link));
  const auto x = one.schedule_transfer(0, 1, 10), y = one.schedule_transfer(0, 1, 10);
  EXPECT_NEAR(seconds(y - x), alpha + wire, 1e-3);
}
