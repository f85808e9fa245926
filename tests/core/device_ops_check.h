// Runs every Comm operation on buffers of one kind of memory, for comparing host with
// device runs bit for bit (tests/core/device_ops_test.cpp on a stand-in device,
// tests/gpu/cuda_device_ops_test.cpp on a real GPU).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "core/comm/dtype.h"
#include "core/memory/device_ops.h"
#include "core/memory/memory.h"
#include "labs/collectives/crafted.h"
#include "tests/test_util.h"

namespace dtl::test {

// Starts P ranks running a body (thread ranks by default; the NCCL test passes its own).
using RankRunner = std::function<void(int P, const std::function<void(Comm&)>& body)>;

// Every library collective and a ring of recv_reduce/send on crafted inputs, on `device`;
// returns each rank's result bytes (downloaded to the host), rank by rank.
inline std::vector<std::vector<char>> run_all_operations(int P, std::size_t n, DType t, Device::Kind kind,
                                                         const RankRunner& runner = {}) {
  const std::size_t es = dtype_size(t);
  std::vector<std::vector<char>> results(static_cast<std::size_t>(P));
  const RankRunner run =
      runner ? runner
             : RankRunner([](int ranks, const std::function<void(Comm&)>& body) { test::run_ranks(ranks, body); });
  run(P, [&](Comm& c) {
    MemoryTracker mem(c.rank(), nullptr);
    const Device dev =
        kind == Device::Kind::cpu ? Device::cpu() : Device::cuda(c.rank() % device_ops(Device::cuda(0)).device_count());
    const std::size_t total = n * std::size_t(P);
    Tensor in(mem, {std::int64_t(total)}, t, MemTag::comm, dev), out(mem, {std::int64_t(total)}, t, MemTag::comm, dev);
    std::vector<char> host(total * es), all;
    fill_crafted(host.data(), total, t, c.rank());
    auto upload = [&] { copy_bytes(in.data(), host.data(), host.size()); };
    auto keep = [&](const Tensor& x, std::size_t bytes) {
      std::vector<char> back(bytes);
      copy_bytes(back.data(), x.data(), bytes);
      all.insert(all.end(), back.begin(), back.end());
    };
    upload();
    c.all_reduce(in.data(), out.data(), total, t, ReduceOp::avg);  // out of place, divided by P
    keep(out, total * es);
    c.all_reduce(in.data(), in.data(), total, t, ReduceOp::max);  // in place
    keep(in, total * es);
    upload();
    c.reduce_scatter(in.data(), out.data(), n, t, ReduceOp::sum);
    keep(out, n * es);
    c.all_gather(in.data(), out.data(), n, t);
    keep(out, total * es);
    c.all_to_all(in.data(), out.data(), n, t);
    keep(out, total * es);
    std::vector<std::size_t> to, from;  // uneven: (rank + 2q) mod (n + 1) elements to rank q
    for (int q = 0; q < P; ++q)
      to.push_back(std::size_t(c.rank() + 2 * q) % (n + 1)), from.push_back(std::size_t(q + 2 * c.rank()) % (n + 1));
    const AllToAllvLayout uneven = packed_all_to_allv(to, from);
    c.all_to_allv(in.data(), out.data(), uneven, t);
    keep(out, uneven.recv_extent() * es);
    c.reduce(in.data(), out.data(), total, t, ReduceOp::min, P - 1);
    if (c.rank() == P - 1) keep(out, total * es);
    c.broadcast(in.data(), total, t, 0);
    keep(in, total * es);
    // A ring step by hand: receive-and-reduce from the left, send right.
    upload();
    if (P > 1) {
      Request rx = c.irecv_reduce(in.data(), total, t, ReduceOp::sum, (c.rank() + P - 1) % P, 7);
      Request tx = c.isend(out.data(), total * es, (c.rank() + 1) % P, 7);
      rx.wait();
      tx.wait();
      Request rx2 = c.irecv(out.data(), total * es, (c.rank() + P - 1) % P, 8);  // and a plain copy
      Request tx2 = c.isend(in.data(), total * es, (c.rank() + 1) % P, 8);
      rx2.wait();
      tx2.wait();
    }
    keep(in, total * es);
    keep(out, total * es);
    // finish_average and scale_in_place dispatch on where the buffer lives.
    finish_average(in.data(), total, t, ReduceOp::avg, 3);
    if (t != DType::i32 && t != DType::i64) scale_in_place(in.data(), total, t, 0.5);  // floating types only
    keep(in, total * es);
    results[std::size_t(c.rank())] = std::move(all);
  });
  return results;
}

// Bytes that differ between two runs' results, rank by rank (0 for each rank expected).
inline std::vector<std::size_t> differing_bytes(const std::vector<std::vector<char>>& a,
                                                const std::vector<std::vector<char>>& b) {
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < a.size(); ++r) {
    std::size_t d = a[r].size() == b[r].size() ? 0 : std::max(a[r].size(), b[r].size());
    for (std::size_t i = 0; i < std::min(a[r].size(), b[r].size()); ++i) d += a[r][i] != b[r][i];
    out.push_back(d);
  }
  return out;
}

}  // namespace dtl::test
