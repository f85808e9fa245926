// The MPI backend under mpirun: every Comm operation against a local reference, with
// uneven sizes and in place. Run: mpirun -np 4 tests/mpi_comm_test
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/comm/chunking.h"
#include "core/comm/mpi_backend.h"
#include "core/error.h"
#include "core/trace/trace.h"
#include "exercises/collectives.h"
#include "labs/collectives/crafted.h"

using namespace dtl;

namespace {
void on_mpi(const std::function<void(Comm&)>& body, Trace* trace = nullptr) {
  MpiOptions opt;
  opt.trace = trace;
  opt.timeout_s = 30;
  run_mpi(opt, body);
}
double value(int r, std::size_t i) { return double((r * 5 + int(i % 11)) % 9) - 4; }
}  // namespace

TEST(MpiCollectives, AllReduceEveryOpInAndOutOfPlace) {
  on_mpi([](Comm& c) {
    const int P = c.size();
    for (std::size_t n : {std::size_t(1), std::size_t(1003)})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
        for (bool in_place : {false, true}) {
          std::vector<double> in(n), out(n);
          for (std::size_t i = 0; i < n; ++i) in[i] = value(c.rank(), i);
          double* dst = in_place ? in.data() : out.data();
          c.all_reduce(in.data(), dst, n, DType::f64, op);
          double worst = 0;
          for (std::size_t i = 0; i < n; ++i) {
            double want = value(0, i);
            for (int r = 1; r < P; ++r)
              want = op == ReduceOp::max   ? std::max(want, value(r, i))
                     : op == ReduceOp::min ? std::min(want, value(r, i))
                                           : want + value(r, i);
            if (op == ReduceOp::avg) want /= P;
            worst = std::max(worst, std::fabs(dst[i] - want));
          }
          EXPECT_EQ(worst, 0.0) << "n=" << n << " op=" << reduce_op_name(op) << " in_place=" << in_place;
        }
  });
}

TEST(MpiCollectives, HalfTypesUseOurOwnOps) {
  on_mpi([](Comm& c) {
    std::vector<std::uint16_t> v(10, float_to_bf16(1.5f));
    c.all_reduce(v.data(), v.data(), v.size(), DType::bf16, ReduceOp::sum);
    EXPECT_EQ(bf16_to_float(v[3]), 1.5f * float(c.size()));
  });
}

TEST(MpiCollectives, ReduceScatterAllGatherBroadcastReduceAllToAll) {
  on_mpi([](Comm& c) {
    const int P = c.size();
    const std::size_t n = 7;
    std::vector<std::int32_t> in(n * std::size_t(P)), block(n), all(n * std::size_t(P));
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = c.rank() + int(i);
    c.reduce_scatter(in.data(), block.data(), n, DType::i32, ReduceOp::sum);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(block[i], P * (P - 1) / 2 + P * int(std::size_t(c.rank()) * n + i));
    // NCCL's in-place reduce_scatter: the output is block `rank` of the input.
    std::vector<std::int32_t> inplace = in;
    std::int32_t* mine = inplace.data() + std::size_t(c.rank()) * n;
    c.reduce_scatter(inplace.data(), mine, n, DType::i32, ReduceOp::sum);
    EXPECT_EQ(std::memcmp(mine, block.data(), n * 4), 0);
    c.all_gather(block.data(), all.data(), n, DType::i32);
    for (int q = 0; q < P; ++q) EXPECT_EQ(all[std::size_t(q) * n], P * (P - 1) / 2 + P * q * int(n));
    std::vector<double> b(5, c.rank() == P - 1 ? 3.5 : 0.0);
    c.broadcast(b.data(), 5, DType::f64, P - 1);
    EXPECT_EQ(b[4], 3.5);
    double s = 1, total = 0;
    c.reduce(&s, &total, 1, DType::f64, ReduceOp::sum, 0);
    if (c.rank() == 0) { EXPECT_EQ(total, P); }
    std::vector<std::int64_t> send(static_cast<std::size_t>(P)), recv(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q) send[std::size_t(q)] = c.rank() * 100 + q;
    c.all_to_all(send.data(), recv.data(), 1, DType::i64);
    for (int q = 0; q < P; ++q) EXPECT_EQ(recv[std::size_t(q)], q * 100 + c.rank());
    // Uneven: rank r sends q + 1 copies of r·100 + q to rank q (so receives r + 1 from each).
    std::vector<std::size_t> to, from;
    for (int q = 0; q < P; ++q) to.push_back(std::size_t(q + 1)), from.push_back(std::size_t(c.rank() + 1));
    const AllToAllvLayout l = packed_all_to_allv(to, from);
    std::vector<std::int64_t> vsend(l.send_extent()), vrecv(l.recv_extent(), -1);
    for (int q = 0; q < P; ++q)
      for (std::size_t i = 0; i < to[std::size_t(q)]; ++i)
        vsend[l.send_displs[std::size_t(q)] + i] = c.rank() * 100 + q;
    c.all_to_allv(vsend.data(), vrecv.data(), l, DType::i64);
    for (int q = 0; q < P; ++q)
      for (std::size_t i = 0; i <= std::size_t(c.rank()); ++i)
        EXPECT_EQ(vrecv[l.recv_displs[std::size_t(q)] + i], q * 100 + c.rank()) << "from rank " << q;
    c.barrier();
  });
}

TEST(MpiPointToPoint, TagsRecvReduceAndSizeErrors) {
  on_mpi([](Comm& c) {
    const int P = c.size(), right = mod(c.rank() + 1, P), left = mod(c.rank() - 1, P);
    int a = c.rank() * 10, b = c.rank() * 10 + 1, got_a = -1, got_b = -1;
    Request ra = c.irecv(&got_a, 4, left, 1), rb = c.irecv(&got_b, 4, left, 2);
    c.send(&b, 4, right, 2);  // tag 2 first: matching is by tag, not order
    c.send(&a, 4, right, 1);
    rb.wait();
    ra.wait();
    EXPECT_EQ(got_a, left * 10);
    EXPECT_EQ(got_b, left * 10 + 1);
    std::vector<float> v(3, 1.0f), w(3, 2.0f);
    Request rr = c.irecv_reduce(v.data(), 3, DType::f32, ReduceOp::sum, left, 3);
    c.send(w.data(), 12, right, 3);
    rr.wait();
    EXPECT_EQ(v[2], 3.0f);
    char small[4] = {}, big[8] = {};
    Request bad = c.irecv(big, 8, left, 4);
    c.send(small, 4, right, 4);
    EXPECT_THROW(bad.wait(), Error);  // 4 bytes arrived where 8 were expected
  });
}

TEST(MpiSubGroups, SplitAndTheRingExercise) {
  Trace trace(mpi_init().size);
  on_mpi(
      [](Comm& c) {
        auto half = c.split(c.rank() % 2, c.rank());
        ASSERT_NE(half, nullptr);
        double v = c.rank();
        half->all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
        double want = 0;
        for (int q = c.rank() % 2; q < c.size(); q += 2) want += q;
        EXPECT_EQ(v, want);
        // The lab code runs unchanged on MPI: the ring exercise on crafted input is exact.
        for (auto fn : {ex::ring_all_reduce, ex::rhd_all_reduce, ex::tree_all_reduce, ex::naive_all_reduce}) {
          std::vector<float> buf(1003);
          fill_crafted(buf.data(), buf.size(), DType::f32, c.rank());
          fn(c, {buf.data(), buf.size(), DType::f32}, ReduceOp::sum);
          EXPECT_EQ(compare_with_crafted(buf.data(), buf.size(), DType::f32, c.size(), ReduceOp::sum).wrong, 0u);
        }
      },
      &trace);
  // And the merged trace joins every send to a receive.
  std::unique_ptr<Trace> merged = merge_traces_on_root(trace);
  if (merged) {
    int sends = 0, joined = 0, reduced = 0;
    for (const Event& e : merged->snapshot()) {
      sends += e.kind == EventKind::send;
      joined += e.kind == EventKind::send && e.flow_id != 0;
      reduced += e.kind == EventKind::recv && (e.flags & kFlagReduce) != 0;
    }
    EXPECT_GT(sends, 0);
    EXPECT_EQ(joined, sends);
    EXPECT_GT(reduced, 0) << "recv_reduce must be marked as a reduction in the trace (the ring view depends on it)";
  }
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  mpi_init();
  return RUN_ALL_TESTS();
}
