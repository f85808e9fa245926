// `dtlab bench COLLECTIVE`: nccl-tests' sweep, on thread ranks.
//
//   dtlab bench all_reduce --impl library --ranks 4 -b 8 -e 256M -f 2 --json out.json
//   dtlab bench ping_pong --ranks 2 -b 1K -e 64M -f 4      # point-to-point (bench_ping_pong.cpp)
//
// Prints `size count type redop | time algbw busbw #wrong` for out-of-place and in-place
// (GB = 1e9; busbw = algbw · the collective's factor, 2(P-1)/P for all_reduce), and the
// all-reduce's ceiling measured in the same run: the least memory traffic it must cause
// over the memory bandwidth of P threads at once (bench_ceiling.h). With --device cuda the
// buffers live on GPUs and the bandwidth comes from a device-to-device copy instead.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/memory/memory.h"
#include "core/theory/collectives.h"
#include "core/trace/chrome_writer.h"
#include "core/util/files.h"
#include "core/util/units.h"
#include "exercises/collectives.h"
#include "kernels/cuda/device.h"
#include "labs/cli/backend.h"
#include "labs/cli/bench_ceiling.h"
#include "labs/cli/bench_plan.h"
#include "labs/cli/commands.h"
#include "labs/cli/memory_bandwidth.h"
#include "labs/cli/validators.h"
#include "labs/collectives/crafted.h"
#include "labs/lab.h"
#include "labs/measure.h"

namespace dtl::cli {

namespace {

// Bytes read + written per second by a device-to-device copy on `device`, best of several:
// what the ranks sharing that GPU can move at most (the ceiling's bandwidth on a GPU).
double measure_device_copy_bandwidth(Device device, std::size_t bytes) {
  DeviceOps& ops = device_ops(device);
  void* a = ops.allocate(bytes, device.index);
  void* b = ops.allocate(bytes, device.index);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    ops.copy(b, a, bytes);  // returns when the copy is done
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(bytes) / s);
  }
  ops.release(a);
  ops.release(b);
  return best;
}

MemoryBandwidth device_copy_bandwidth(Device device, std::size_t bytes) {
  MemoryBandwidth bw;
  bw.copy = measure_device_copy_bandwidth(device, bytes);
  bw.threads = 1;
  return bw;
}

// As many probe threads as ranks (at most 64, or 2 per core where there are more cores:
// beyond that threads add only scheduling), each with arrays of 256 MiB / threads, at
// least 256 KiB and at most 32 MiB: together far larger than the caches, and at most
// 768 MiB for the three arrays.
int probe_threads(int P) { return std::min(P, std::max(64, 2 * int(std::thread::hardware_concurrency()))); }
std::size_t probe_bytes_per_thread(int threads) {
  return std::clamp<std::size_t>((std::size_t(256) << 20) / std::size_t(threads), std::size_t(256) << 10,
                                 std::size_t(32) << 20);
}

void print_header(std::ostream& out, const BenchArgs& a, const BenchPlan& p, const MemoryBandwidth& bw) {
  char line[256];
  std::snprintf(line, sizeof line, "# dtlab bench %s  impl %s  backend %s  device %s  ranks %d  dtype %s  op %s\n",
                a.collective.c_str(), a.impl.c_str(), p.backend.name(), p.on_gpu ? "cuda" : "cpu", p.P,
                std::string(dtype_name(p.t)).c_str(), a.op.c_str());
  out << line;
  std::snprintf(line, sizeof line, "# %s %.2f GB/s (%d threads at once) -> ceiling busbw %.2f GB/s\n",
                p.on_gpu ? "device-to-device copy" : "memory bandwidth", bw.best() / 1e9, bw.threads,
                bench_ceiling_busbw(p, bw) / 1e9);
  out << line;
  out << "#                                              out-of-place                       in-place\n"
         "#       size         count      type   redop     time   algbw   busbw  #wrong     time   algbw   busbw  "
         "#wrong\n"
         "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)              (us)  (GB/s)  (GB/s)\n";
}

// One rank's send and receive buffers for the largest size, preallocated and prefaulted
// once (MemoryTracker touches every page), on the host or the rank's GPU; inputs are
// written on the host and uploaded, results downloaded to be checked.
struct RankBuffers {
  const BenchPlan& p;
  int rank;
  MemoryTracker mem;
  Tensor send, recv;
  std::vector<char> host;  // the staging copy when buffers are on a GPU
  RankBuffers(Comm& comm, const BenchPlan& plan) : p(plan), rank(comm.rank()), mem(comm.global_rank(), nullptr) {
    const auto max_count = std::int64_t(p.sweep.sizes.back() / p.es);  // sizes.back() is the largest
    const Device dev = rank_device(p.on_gpu ? Device::Kind::cuda : Device::Kind::cpu, comm);
    send = Tensor(mem, {max_count}, p.t, MemTag::comm, dev);
    recv = Tensor(mem, {std::int64_t(p.recv_elements)}, p.t, MemTag::comm, dev);
    host.resize(p.on_gpu ? std::size_t(max_count) * p.es : 0);
  }
  void fill_send(std::size_t n) {
    if (!p.on_gpu) return fill_crafted(send.data(), n, p.t, rank);
    fill_crafted(host.data(), n, p.t, rank);
    copy_bytes(send.data(), host.data(), n * p.es);
  }
  std::size_t wrong_in(const void* result, std::size_t n) {
    if (p.coll == CollectiveKind::all_to_allv) return wrong_blocks(result, n);
    if (!p.on_gpu) return compare_with_crafted(result, n, p.t, p.P, p.op).wrong;
    copy_bytes(host.data(), result, n * p.es);
    return compare_with_crafted(host.data(), n, p.t, p.P, p.op).wrong;
  }
  // all_to_allv: each block received from rank q must be q's crafted input at the offset q
  // sends to this rank (every rank sends the same counts: the same offsets).
  std::size_t wrong_blocks(const void* result, std::size_t count) {
    const AllToAllvLayout l = skewed_all_to_allv(p.P, rank, count, p.skew);
    std::vector<char> got(l.recv_extent() * p.es), sender(l.send_extent() * p.es);
    copy_bytes(got.data(), result, got.size());  // host or device memory
    std::size_t wrong = 0;
    for (int q = 0; q < p.P; ++q) {
      fill_crafted(sender.data(), l.send_extent(), p.t, q);
      const char* want = sender.data() + l.send_displs[std::size_t(rank)] * p.es;
      const char* have = got.data() + l.recv_displs[std::size_t(q)] * p.es;
      for (std::size_t i = 0; i < l.recv_counts[std::size_t(q)]; ++i)
        wrong += std::memcmp(want + i * p.es, have + i * p.es, p.es) != 0;
    }
    return wrong;
  }
};

// One size, out of place (inplace = 0) and in place (1): time, bandwidths, wrong elements.
struct SizeRow {
  std::size_t count = 0;
  nlohmann::json json[2];
  double time_us[2] = {}, algbw[2] = {}, busbw[2] = {}, wrong[2] = {};
};

SizeRow measure_size(Comm& comm, std::span<Comm* const> channels, const BenchArgs& a, const BenchPlan& p,
                     RankBuffers& buf, std::uint64_t size) {
  SizeRow row;
  const std::size_t total = size / p.es;
  row.count = p.split ? total / std::size_t(p.P) : total;  // >= 1: sizes are multiples of `unit`
  const std::size_t count = row.count;
  for (int inplace = 0; inplace < 2; ++inplace) {
    void* s = buf.send.data();
    void* r = inplace ? buf.send.data() : buf.recv.data();
    const bool to_all = p.coll == CollectiveKind::all_to_all || p.coll == CollectiveKind::all_to_allv;
    if (inplace && p.split && !to_all) {
      // NCCL's in-place conventions: all_gather's input is block `rank` of the output;
      // reduce_scatter's output is block `rank` of the input.
      if (p.coll == CollectiveKind::all_gather)
        s = static_cast<char*>(r) + std::size_t(comm.rank()) * count * p.es;
      else
        r = static_cast<char*>(s) + std::size_t(comm.rank()) * count * p.es;
    }
    if (inplace && to_all) r = buf.recv.data();  // no in-place all_to_all(v)
    buf.fill_send(p.split ? count * std::size_t(p.P) : count);
    for (int i = 0; i < a.warmup; ++i) p.fn(comm, channels, s, r, count);
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < a.iters; ++i) p.fn(comm, channels, s, r, count);
    const double sec =
        max_over_ranks(comm, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / a.iters);
    double wrong = 0;
    const bool checked = p.coll == CollectiveKind::all_reduce || p.coll == CollectiveKind::all_to_allv;
    if (a.check && checked) {  // one more run on fresh crafted input
      buf.fill_send(p.split ? count * std::size_t(p.P) : count);
      p.fn(comm, channels, s, r, count);
      wrong = double(buf.wrong_in(r, count));
      comm.all_reduce(&wrong, &wrong, 1, DType::f64, ReduceOp::sum);
    }
    const double bytes = theory::collective_bytes(p.coll, p.P, double(count * p.es));
    row.time_us[inplace] = sec * 1e6;
    row.algbw[inplace] = bytes / sec / 1e9;
    row.busbw[inplace] = row.algbw[inplace] * theory::busbw_factor(p.coll, p.P);
    row.wrong[inplace] = wrong;
    row.json[inplace] = {{"bytes", std::uint64_t(bytes)},
                         {"count", count},
                         {"inplace", bool(inplace)},
                         {"time_us", row.time_us[inplace]},
                         {"algbw_GBps", row.algbw[inplace]},
                         {"busbw_GBps", row.busbw[inplace]},
                         {"wrong", wrong}};
  }
  return row;
}

void print_row(std::ostream& out, const BenchArgs& a, const BenchPlan& p, const SizeRow& row) {
  char line[256];
  std::snprintf(line, sizeof line, "%12llu  %12zu  %8s  %6s  %7.1f  %6.2f  %6.2f  %6.0f  %7.1f  %6.2f  %6.2f  %6.0f\n",
                static_cast<unsigned long long>(row.json[0]["bytes"].get<std::uint64_t>()), row.count,
                std::string(dtype_name(p.t)).c_str(), a.op.c_str(), row.time_us[0], row.algbw[0], row.busbw[0],
                row.wrong[0], row.time_us[1], row.algbw[1], row.busbw[1], row.wrong[1]);
  out << line << std::flush;
}

// Rank 0 after the sweep: the footer against the ceiling, the trace, the JSON.
int finish_bench(std::ostream& out, const BenchArgs& a, const BenchPlan& p, const nlohmann::json& rows,
                 const MemoryBandwidth& bw, Trace* trace) {
  double total_wrong = 0;
  for (const auto& r : rows) total_wrong += r["wrong"].get<double>();
  const double share = print_ceiling_footer(out, p, bw, rows);
  double ring_share = 0;
  if (a.impl == "ring" || a.impl == "ring_sliced") ring_share = print_ring_ceiling(out, p, bw, rows);
  out << "# #wrong total " << total_wrong << "\n";
  if (p.sweep.rounded)
    out << "# note: sizes rounded to a multiple of " << p.unit << " B (" << p.unit_is
        << "); the size column shows what ran\n";
  if (trace) write_chrome_trace(*trace, a.trace_path);
  if (!a.json_path.empty()) {
    nlohmann::json j = {{"collective", a.collective},
                        {"impl", a.impl},
                        {"backend", p.backend.name()},
                        {"ranks", p.P},
                        {"dtype", std::string(dtype_name(p.t))},
                        {"op", a.op},
                        {"traced", trace != nullptr},
                        {"memory_GBps",
                         {{"read", bw.read / 1e9},
                          {"write", bw.write / 1e9},
                          {"copy", bw.copy / 1e9},
                          {"triad", bw.triad / 1e9},
                          {"threads", bw.threads}}},
                        {"ceiling_busbw_GBps", bench_ceiling_busbw(p, bw) / 1e9},
                        {"ceiling_min_bytes", ceiling_min_bytes(p.P)},
                        {"ceiling_share", share},
                        {"rows", rows}};
    if (ring_share > 0)
      j["ring_ceiling"] = {{"busbw_GBps", ring_ceiling_busbw(p.P, bw.best()) / 1e9},
                           {"share", ring_share},
                           {"kernel_rates_busbw_GBps", ring_busbw_at_kernel_rates(p.P, bw) / 1e9}};
    emit_bench_json(std::move(j), p.link, a.json_path);
  }
  return total_wrong == 0 ? 0 : 1;
}

int run_bench(BenchArgs& a) {
  if (a.algo == "auto") return run_bench_auto(a);
  const BenchPlan p = plan_bench(a);
  if (p.ping_pong) return run_ping_pong(a, p);
  std::ostream& out = a.json_path == "-" ? std::cerr : std::cout;  // --json -: stdout holds only JSON
  std::unique_ptr<MemoryBandwidthProbe> probe;                     // made on first use, by rank 0
  auto measure_bandwidth = [&] {
    if (p.on_gpu) return device_copy_bandwidth(Device::cuda(0), std::size_t(256) << 20);
    if (!probe)
      probe = std::make_unique<MemoryBandwidthProbe>(probe_threads(p.P), probe_bytes_per_thread(probe_threads(p.P)));
    return probe->measure();
  };
  // The machine's bandwidth drifts on shared VMs: rank 0 measures it before the sweep and
  // again after every size the ceiling applies to (the other ranks wait at a barrier), and
  // the sweep is held to the best seen.
  MemoryBandwidth bw;
  nlohmann::json rows = nlohmann::json::array();
  std::unique_ptr<Trace> trace = a.trace_path.empty() ? nullptr : std::make_unique<Trace>(p.P);
  ThreadsOptions opt;
  opt.world_size = p.P;
  opt.timeout_s = a.timeout_s;
  opt.trace = trace.get();
  opt.link = p.link;
  RunResult result = p.backend.run(opt, a.trace_path, [&](Comm& comm) {
    if (comm.rank() == 0) print_header(out, a, p, bw = measure_bandwidth());
    comm.barrier();
    RankBuffers buf(comm, p);
    // --channels C: C communicators over the same ranks, split once (NCCL's channels).
    std::vector<std::unique_ptr<Comm>> split;
    if (p.channels > 1) split = comm.split_channels(p.channels);
    std::vector<Comm*> channels{&comm};
    if (!split.empty()) channels.clear();
    for (const auto& c : split) channels.push_back(c.get());
    for (std::uint64_t size : p.sweep.sizes) {
      const SizeRow row = measure_size(comm, channels, a, p, buf, size);
      if (comm.rank() == 0) {
        print_row(out, a, p, row);
        rows.push_back(row.json[0]);
        rows.push_back(row.json[1]);
        if (size >= ceiling_min_bytes(p.P) || p.on_gpu) bw.keep_best(measure_bandwidth());  // where it bounds
      }
      comm.barrier();
    }
  });
  if (!result.ok()) {
    std::cerr << "dtlab bench: " << result.error << "\n";
    return 1;
  }
  std::unique_ptr<Trace> gathered = trace ? p.backend.gather(*trace) : nullptr;
  if (!p.backend.root) return 0;  // under MPI, rank 0 reports for everyone
  return finish_bench(out, a, p, rows, bw, gathered ? gathered.get() : trace.get());
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  CLI::App* b = app.add_subcommand("bench", "Sweep a collective's sizes, nccl-tests style");
  auto a = std::make_shared<BenchArgs>();
  b->add_option("collective", a->collective,
                "all_reduce reduce_scatter all_gather broadcast reduce all_to_all all_to_allv, or ping_pong (send/recv "
                "between ranks 0 and 1; one way = round trip / 2)")
      ->check(CLI::IsMember({"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all",
                             "all_to_allv", "ping_pong"}))
      ->capture_default_str();
  b->add_option("--impl", a->impl, "library (the backend's own) or a point-to-point algorithm")
      ->check(CLI::IsMember({"library", "ring", "ring_sliced", "tree", "double_tree", "rhd", "naive"}))
      ->capture_default_str();
  b->add_option("--algo", a->algo,
                "auto: print the time NCCL's tuning model predicts for each algorithm × protocol per size, the pick "
                "marked and why (runs nothing; see --gpu, --per-node)")
      ->check(CLI::IsMember({"auto"}));
  b->add_option("--gpu", a->gpu, "--algo auto: the GPU profile (a100-sxm4-80gb, h100-sxm5, h200)")
      ->capture_default_str();
  b->add_option("--channels", a->channels,
                "NCCL's channels: --impl ring_sliced or double_tree on C rings or tree pairs at once (N/C bytes "
                "each); --algo auto: the fabric's channels (default 16)")
      ->check(whole_range(1, 64));
  b->add_option("--per-node", a->per_node, "--algo auto: ranks per node")
      ->check(whole_range(1, 4096))
      ->capture_default_str();
  b->add_option("--ranks,-r", a->ranks, "Number of ranks (threads: default 4; mpi: as started by mpirun)")
      ->check(whole_range(1, 4096));
  b->add_option("--backend", a->backend, "threads; mpi under mpirun/srun; nccl (a GPU per rank)")
      ->check(CLI::IsMember({"threads", "mpi", "nccl"}))
      ->capture_default_str();
  b->add_option("--device", a->device,
                "Where the buffers live: cpu (default), or cuda (rank r on GPU r mod count; "
                "implied by --backend nccl)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  b->add_option("-b,--minbytes", a->min_bytes, "Smallest size (K/M/G = powers of 1024)")->capture_default_str();
  b->add_option("-e,--maxbytes", a->max_bytes, "Largest size")->capture_default_str();
  b->add_option("-f,--stepfactor", a->factor, "Multiply the size by this each step")->capture_default_str();
  b->add_option("-n,--iters", a->iters, "Timed iterations per size")
      ->check(whole_range(1, 1000000))
      ->capture_default_str();
  b->add_option("-w,--warmup_iters", a->warmup, "Untimed iterations first")
      ->check(whole_range(0, 1000000))
      ->capture_default_str();
  b->add_option("-c,--check", a->check, "Check results (0/1)")->check(whole_range(0, 1))->capture_default_str();
  b->add_option("--dtype,-d", a->dtype, "f32 f64 i32 i64 f16 bf16")->capture_default_str();
  b->add_option("--op,-o", a->op, "sum avg max min")->capture_default_str();
  b->add_option("--json", a->json_path, "Write the results as JSON to this file ('-': stdout, table to stderr)");
  b->add_option("--trace", a->trace_path, "Record events and write a Chrome trace (measures tracing's cost)");
  b->add_option("--timeout", a->timeout_s, "Watchdog seconds")->check(finite_range(0.001, 1e6))->capture_default_str();
  b->add_option("--skew", a->skew,
                "all_to_allv: rank 0 receives this many times any other rank's share (a hot expert; 1: even, "
                "all_to_all's layout)")
      ->check(finite_range(1, 1e6));
  b->add_option("--link", a->link, "Emulate an interconnect: nvlink4 nvlink3 pcie5 pcie4 ib-ndr ib-hdr eth100");
  b->add_option("--link-bw", a->link_bw, "Emulated link bandwidth, GB/s per direction")->check(finite_range(1e-6, 1e6));
  b->add_option("--protocol", a->protocol, "How the emulated link carries messages: LL, LL128 or Simple (NCCL's)");
  b->add_option("--link-latency", a->link_latency, "Emulated link latency, microseconds")->check(finite_range(0, 1e9));
  return [a] { return run_bench(*a); };
}

}  // namespace dtl::cli
