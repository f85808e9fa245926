// `dtlab bench ping_pong`: the point-to-point sweep the α–β fit needs (bench/peers.sh).
//
//   dtlab bench ping_pong --ranks 2 -b 1K -e 64M -f 4 --json out.json [--link pcie4]
//   mpirun -np 2 dtlab bench ping_pong --backend mpi -b 1K -e 64M -f 4
//
// Rank 0 sends N bytes to rank 1, which sends them straight back (blocking send/recv, one
// message each way); the round trip is timed on rank 0 over -n iterations after -w
// untimed ones, and one way is half of it: the curriculum's t = α + N·β for one message.
// Both buffers are allocated once for the largest size and prefaulted (MemoryTracker), as
// in the collective sweep. Ranks beyond 2 only wait at the barriers. With -c 1, one more
// round trip of crafted data checks that the bytes came back unchanged.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/memory/memory.h"
#include "core/util/files.h"
#include "labs/cli/bench_plan.h"
#include "labs/collectives/crafted.h"

namespace dtl::cli {

namespace {

constexpr int kTag = 7301;  // the ping-pong's messages; nothing else in the bench sends

void print_header(std::ostream& out, const BenchArgs& a, const BenchPlan& p) {
  char line[256];
  std::snprintf(line, sizeof line, "# dtlab bench ping_pong  backend %s  ranks %d (0 <-> 1)  dtype %s%s%s\n",
                p.backend.name(), p.P, std::string(dtype_name(p.t)).c_str(), p.link.active() ? "  link " : "",
                p.link.active() ? p.link.name.c_str() : "");
  out << line;
  std::snprintf(line, sizeof line, "# one way = round trip / 2, mean over %d round trips after %d warm-up\n", a.iters,
                a.warmup);
  out << line
      << "#       size         count      type   one-way  round-trip   algbw  #wrong\n"
         "#        (B)    (elements)                (us)        (us)  (GB/s)\n";
}

// One message of `bytes` there and back; rank 1 echoes what it received.
void round_trip(Comm& comm, void* send, void* recv, std::size_t bytes) {
  if (comm.rank() == 0) {
    comm.send(send, bytes, 1, kTag);
    comm.recv(recv, bytes, 1, kTag);
  } else if (comm.rank() == 1) {
    comm.recv(recv, bytes, 0, kTag);
    comm.send(recv, bytes, 0, kTag);
  }
}

// Elements of rank 0's returned buffer that differ from what it sent (rank 0 only).
double wrong_elements(const void* sent, const void* back, std::size_t count, std::size_t es) {
  double wrong = 0;
  for (std::size_t i = 0; i < count; ++i)
    wrong += std::memcmp(static_cast<const char*>(sent) + i * es, static_cast<const char*>(back) + i * es, es) != 0;
  return wrong;
}

// One size's line of the table, and its JSON row (rank 0).
nlohmann::json print_row(std::ostream& out, const BenchPlan& p, std::uint64_t bytes, double rtt, double wrong) {
  const std::size_t count = bytes / p.es;
  const double one_way = rtt / 2, algbw = double(bytes) / one_way / 1e9;
  char line[200];
  std::snprintf(line, sizeof line, "%12llu  %12zu  %8s  %8.2f  %10.2f  %6.2f  %6.0f\n",
                static_cast<unsigned long long>(bytes), count, std::string(dtype_name(p.t)).c_str(), one_way * 1e6,
                rtt * 1e6, algbw, wrong);
  out << line << std::flush;
  return {{"bytes", bytes},
          {"count", count},
          {"inplace", false},
          {"time_us", one_way * 1e6},
          {"round_trip_us", rtt * 1e6},
          {"algbw_GBps", algbw},
          {"busbw_GBps", algbw},
          {"wrong", wrong}};
}

void write_footer_and_json(std::ostream& out, const BenchArgs& a, const BenchPlan& p, const nlohmann::json& rows,
                           double total_wrong) {
  out << "# #wrong total " << total_wrong << "\n";
  if (p.sweep.rounded)
    out << "# note: sizes rounded to a multiple of " << p.unit << " B (" << p.unit_is
        << "); the size column shows what ran\n";
  if (a.json_path.empty()) return;
  nlohmann::json j = {{"collective", "ping_pong"},
                      {"impl", "send_recv"},
                      {"backend", p.backend.name()},
                      {"ranks", p.P},
                      {"dtype", std::string(dtype_name(p.t))},
                      {"rows", rows}};
  emit_bench_json(std::move(j), p.link, a.json_path);
}

}  // namespace

int run_ping_pong(const BenchArgs& a, const BenchPlan& p) {
  std::ostream& out = a.json_path == "-" ? std::cerr : std::cout;  // --json -: stdout holds only JSON
  nlohmann::json rows = nlohmann::json::array();
  ThreadsOptions opt;
  opt.world_size = p.P;
  opt.timeout_s = a.timeout_s;
  opt.link = p.link;
  double total_wrong = 0;
  RunResult result = p.backend.run(opt, "", [&](Comm& comm) {
    if (comm.rank() == 0) print_header(out, a, p);
    const bool active = comm.rank() < 2;
    MemoryTracker mem(comm.global_rank(), nullptr);
    const auto max_count = std::int64_t(active ? p.sweep.sizes.back() / p.es : 1);
    Tensor send(mem, {max_count}, p.t, MemTag::comm, Device::cpu());
    Tensor recv(mem, {max_count}, p.t, MemTag::comm, Device::cpu());
    comm.barrier();
    for (std::uint64_t bytes : p.sweep.sizes) {
      const std::size_t count = bytes / p.es;
      if (comm.rank() == 0) fill_crafted(send.data(), count, p.t, 0);
      for (int i = 0; i < a.warmup; ++i) round_trip(comm, send.data(), recv.data(), bytes);
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < a.iters; ++i) round_trip(comm, send.data(), recv.data(), bytes);
      const double rtt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / a.iters;
      double wrong = 0;
      if (a.check) {  // fresh data one more time: what came back must be what went
        if (comm.rank() == 0) {
          fill_crafted(send.data(), count, p.t, int(bytes % 5) + 1);
          std::memset(recv.data(), 0, bytes);
        }
        round_trip(comm, send.data(), recv.data(), bytes);
        if (comm.rank() == 0) wrong = wrong_elements(send.data(), recv.data(), count, p.es);
      }
      if (comm.rank() == 0) {
        rows.push_back(print_row(out, p, bytes, rtt, wrong));
        total_wrong += wrong;
      }
      comm.barrier();
    }
  });
  if (!result.ok()) {
    std::cerr << "dtlab bench: " << result.error << "\n";
    return 1;
  }
  if (!p.backend.root) return 0;  // under MPI, rank 0 reports
  write_footer_and_json(out, a, p, rows, total_wrong);
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace dtl::cli
