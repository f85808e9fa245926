// `dtlab bench COLLECTIVE`: nccl-tests' sweep, on thread ranks.
//
//   dtlab bench all_reduce --impl library --ranks 4 -b 8 -e 256M -f 2 --json out.json
//
// Prints `size count type redop | time algbw busbw #wrong` for out-of-place and in-place
// (GB = 1e9; busbw = algbw · the collective's factor, 2(P-1)/P for all_reduce), and the
// machine's ceiling measured in the same run: a multi-threaded memcpy's bandwidth turned
// into the best busbw any algorithm could reach (core/theory). With --device cuda the
// buffers live on GPUs and the ceiling comes from a device-to-device copy instead.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

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
#include "labs/cli/commands.h"
#include "labs/cli/validators.h"
#include "labs/collectives/crafted.h"
#include "labs/lab.h"
#include "labs/measure.h"

namespace dtl::cli {

namespace {

struct BenchArgs {
  std::string collective = "all_reduce";
  std::string impl = "library";
  int ranks = -1;  // -1: not given (threads: 4; mpi: what mpirun started)
  std::string backend = "threads";
  std::string device;  // "": cpu, or cuda for --backend nccl
  std::string min_bytes = "32M", max_bytes = "32M";
  double factor = 2;
  int iters = 20, warmup = 5, check = 1;
  std::string dtype = "f32", op = "sum";
  std::string json_path, trace_path;
  std::string link;
  double link_bw = 0, link_latency = 0;
  double timeout_s = 120;
};

// Bytes moved per second by `threads` threads each copying its own prefaulted buffer
// (read + written), best of several rounds.
double measure_memcpy_bandwidth(std::size_t bytes_per_thread) {
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<char>> src(n, std::vector<char>(bytes_per_thread, 1)), dst(n, std::vector<char>(bytes_per_thread, 0));
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < n; ++i) ts.emplace_back([&, i] { std::memcpy(dst[i].data(), src[i].data(), bytes_per_thread); });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(n) * double(bytes_per_thread) / s);
  }
  return best;
}

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

constexpr std::size_t kMaxSweepSizes = 1000;

std::string factor_text(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", f);
  return buf;
}

// -n, -w and -f, each checked with its valid range (nan and inf are no factor).
void check_counts_and_factor(const BenchArgs& a, std::uint64_t lo, std::uint64_t hi) {
  if (a.iters < 1) throw UsageError("-n " + std::to_string(a.iters) + ": the timed iterations must be >= 1");
  if (a.warmup < 0) throw UsageError("-w " + std::to_string(a.warmup) + ": the warm-up iterations must be >= 0");
  if (!std::isfinite(a.factor) || (lo < hi && a.factor <= 1))
    throw UsageError("-f " + factor_text(a.factor) + ": the step factor must be a finite number > 1 (any finite number "
                     "when -b equals -e)");
}

// The sizes of the sweep: -b, -b·f, -b·f², ... up to -e, each rounded down to a multiple
// of `unit` (what one run moves at least: an element, or one per rank when the collective
// splits the buffer P ways) and never below it. `rounded` says whether any size changed.
struct Sweep {
  std::vector<std::uint64_t> sizes;
  bool rounded = false;
};

Sweep plan_sweep(const BenchArgs& a, std::uint64_t lo, std::uint64_t hi, std::uint64_t unit, const std::string& unit_is) {
  if (hi < unit)
    throw UsageError("-e " + a.max_bytes + " is less than " + unit_is + ": the smallest valid size is " +
                     std::to_string(unit) + " B; give -e " + std::to_string(unit) + " or more");
  std::vector<std::uint64_t> raw;
  for (double s = double(lo); s <= double(hi) * 1.0000001 && raw.size() <= kMaxSweepSizes; s *= a.factor) {
    raw.push_back(s >= double(hi) ? hi : std::uint64_t(s));  // the slack above may not reach past -e
    if (lo == hi) break;
  }
  if (raw.size() > kMaxSweepSizes) {
    const double n = std::floor(std::log(double(hi) * 1.0000001 / double(lo)) / std::log(a.factor)) + 1;
    const double min_factor = std::ceil(std::pow(double(hi) / double(lo), 1.0 / double(kMaxSweepSizes - 1)) * 1e4) / 1e4;
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "-f %s from -b %s to -e %s would be %.0f sizes, more than the %zu allowed; use -f %.4f or more, or "
                  "a narrower -b..-e range",
                  factor_text(a.factor).c_str(), a.min_bytes.c_str(), a.max_bytes.c_str(), n, kMaxSweepSizes, min_factor);
    throw UsageError(msg);
  }
  Sweep sweep;
  for (std::uint64_t s : raw) {
    const std::uint64_t r = std::max(unit, s / unit * unit);
    sweep.rounded = sweep.rounded || r != s;
    if (sweep.sizes.empty() || sweep.sizes.back() != r) sweep.sizes.push_back(r);
  }
  return sweep;
}

using OpFn = std::function<void(Comm&, void* send, void* recv, std::size_t count)>;

// The operation under test. Point-to-point algorithms work in place; their out-of-place
// form copies the input to the output first, as a user of them would.
OpFn make_op(const BenchArgs& a, theory::Collective coll, int P, DType t, ReduceOp op) {
  using C = theory::Collective;
  if (a.impl == "library") {
    switch (coll) {
      case C::all_reduce: return [t, op](Comm& c, void* s, void* r, std::size_t n) { c.all_reduce(s, r, n, t, op); };
      case C::reduce_scatter: return [t, op](Comm& c, void* s, void* r, std::size_t n) { c.reduce_scatter(s, r, n, t, op); };
      case C::all_gather: return [t](Comm& c, void* s, void* r, std::size_t n) { c.all_gather(s, r, n, t); };
      case C::broadcast: return [t](Comm& c, void*, void* r, std::size_t n) { c.broadcast(r, n, t, 0); };
      case C::reduce: return [t, op](Comm& c, void* s, void* r, std::size_t n) { c.reduce(s, r, n, t, op, 0); };
      case C::all_to_all: return [t](Comm& c, void* s, void* r, std::size_t n) { c.all_to_all(s, r, n, t); };
    }
  }
  if (coll != C::all_reduce)
    throw UsageError("--impl " + a.impl + " is built for all_reduce only; use --impl library for " + a.collective);
  ex::require_supported_world(P);
  std::function<void(Comm&, ex::BufferView, ReduceOp)> fn = a.impl == "ring"    ? ex::ring_all_reduce
                                                           : a.impl == "tree"  ? ex::tree_all_reduce
                                                           : a.impl == "rhd"   ? ex::rhd_all_reduce
                                                                               : ex::naive_all_reduce;
  return [fn, t, op](Comm& c, void* s, void* r, std::size_t n) {
    if (s != r) copy_bytes(r, s, n * dtype_size(t));  // host or device memory
    fn(c, ex::BufferView{r, n, t}, op);
  };
}

int run_bench(BenchArgs& a) {
  const theory::Collective coll = theory::parse_collective(a.collective);
  const DType t = parse_dtype(a.dtype);
  const ReduceOp op = parse_reduce_op(a.op);
  const std::uint64_t lo = parse_size(a.min_bytes, "-b"), hi = parse_size(a.max_bytes, "-e");
  if (lo == 0 || hi < lo) throw UsageError("-b must be > 0 and <= -e");
  check_counts_and_factor(a, lo, hi);
  const Backend backend = Backend::choose(a.backend, a.ranks);
  const LinkSpec link = make_link(a.link, a.link_bw, a.link_latency);
  if (link.active() && a.backend != "threads") throw UsageError("--link emulates an interconnect between thread ranks only");
  const int P = backend.ranks;
  const std::size_t es = dtype_size(t);
  // Per-rank element counts: all_gather / reduce_scatter / all_to_all split `size` P ways.
  const bool split = coll == theory::Collective::reduce_scatter || coll == theory::Collective::all_gather ||
                     coll == theory::Collective::all_to_all;
  const std::uint64_t unit = split ? es * std::uint64_t(P) : es;
  const std::string unit_is = split ? "one " + std::string(dtype_name(t)) + " element per rank on " + std::to_string(P) + " ranks"
                                    : "one " + std::string(dtype_name(t)) + " element";
  const Sweep sweep = plan_sweep(a, lo, hi, unit, unit_is);
  const std::vector<std::uint64_t>& sizes = sweep.sizes;
  // Every rank holds a send and a receive buffer of the largest size (thread ranks: all in here).
  require_memory(2.0 * double(sizes.back()) * (backend.name == "threads" ? P : 1), "-e (or --ranks)");
  const bool json_only_stdout = a.json_path == "-";
  std::ostream& out = json_only_stdout ? std::cerr : std::cout;
  OpFn fn = make_op(a, coll, P, t, op);
  if (a.backend == "nccl") {  // NCCL moves GPU memory only
    if (a.device == "cpu") throw UsageError("--backend nccl moves GPU memory; drop --device cpu (nccl implies cuda)");
    a.device = "cuda";
  }
  const bool on_gpu = a.device == "cuda";
  if (on_gpu) {
    if (a.backend == "mpi")
      throw UsageError("--device cuda: the Open MPI backend moves host buffers; use --backend nccl, or threads (ranks "
                       "sharing GPUs)");
    cuda::use_cuda_memory();  // no GPU or no CUDA build: says so, exit 2
  }
  const Device::Kind device_kind = on_gpu ? Device::Kind::cuda : Device::Kind::cpu;
  auto measure_bandwidth = [&] {
    return on_gpu ? measure_device_copy_bandwidth(Device::cuda(0), std::size_t(256) << 20)
                  : measure_memcpy_bandwidth(std::size_t(64) << 20);
  };

  // The machine's bandwidth drifts on shared VMs: rank 0 measures it before the sweep and
  // again after every size (the other ranks wait at a barrier), and the sweep is held to
  // the best seen.
  double bw = 0;
  // busbw is normalized to a link's bandwidth: on an emulated link that is the ceiling.
  auto ceiling_of = [&](double b) {
    if (link.active()) return link.beta_Bps();
    return a.impl == "library" ? theory::shared_memory_all_reduce_ceiling_busbw(P, b)
                               : theory::shared_memory_ring_ceiling_busbw(P, b);
  };
  char line[256];

  nlohmann::json rows = nlohmann::json::array();
  std::unique_ptr<Trace> trace = a.trace_path.empty() ? nullptr : std::make_unique<Trace>(P);

  ThreadsOptions opt;
  opt.world_size = P;
  opt.timeout_s = a.timeout_s;
  opt.trace = trace.get();
  opt.link = link;
  RunResult result = backend.run(opt, a.trace_path, [&](Comm& comm) {
    if (comm.rank() == 0) {
      bw = measure_bandwidth();
      std::snprintf(line, sizeof line, "# dtlab bench %s  impl %s  backend %s  device %s  ranks %d  dtype %s  op %s\n",
                    a.collective.c_str(), a.impl.c_str(), backend.name.c_str(), on_gpu ? "cuda" : "cpu", P,
                    std::string(dtype_name(t)).c_str(), a.op.c_str());
      out << line;
      if (on_gpu)
        std::snprintf(line, sizeof line, "# device-to-device copy %.2f GB/s (read+written, GPU 0) -> ceiling busbw %.2f GB/s\n",
                      bw / 1e9, ceiling_of(bw) / 1e9);
      else
        std::snprintf(line, sizeof line, "# memcpy bandwidth %.2f GB/s (read+written, %u threads) -> ceiling busbw %.2f GB/s\n",
                      bw / 1e9, std::max(1u, std::thread::hardware_concurrency()), ceiling_of(bw) / 1e9);
      out << line;
      out << "#                                              out-of-place                       in-place\n"
             "#       size         count      type   redop     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
             "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)              (us)  (GB/s)  (GB/s)\n";
    }
    comm.barrier();
    MemoryTracker mem(comm.global_rank(), nullptr);
    const std::size_t max_count = std::size_t(sizes.back() / es);  // every size fits: sizes.back() is the largest
    // Preallocated and prefaulted once (MemoryTracker touches every page).
    const Device dev = rank_device(device_kind, comm);  // inputs are written on the host and uploaded
    Tensor send(mem, {std::int64_t(max_count)}, t, MemTag::comm, dev), recv(mem, {std::int64_t(max_count)}, t, MemTag::comm, dev);
    std::vector<char> host(on_gpu ? max_count * es : 0);  // the staging copy when buffers are on a GPU
    auto fill_send = [&](std::size_t n) {
      if (!on_gpu) return fill_crafted(send.data(), n, t, comm.rank());
      fill_crafted(host.data(), n, t, comm.rank());
      copy_bytes(send.data(), host.data(), n * es);
    };
    auto wrong_in = [&](const void* result, std::size_t n) {
      if (!on_gpu) return compare_with_crafted(result, n, t, P, op).wrong;
      copy_bytes(host.data(), result, n * es);
      return compare_with_crafted(host.data(), n, t, P, op).wrong;
    };
    for (std::uint64_t size : sizes) {
      const std::size_t total = size / es;
      const std::size_t count = split ? total / std::size_t(P) : total;  // >= 1: sizes are multiples of `unit`
      nlohmann::json json_row[2];
      double report[2][4] = {};
      for (int inplace = 0; inplace < 2; ++inplace) {
        void* s = send.data();
        void* r = inplace ? send.data() : recv.data();
        if (inplace && split && coll != theory::Collective::all_to_all) {
          // NCCL's in-place conventions: all_gather's input is block `rank` of the output;
          // reduce_scatter's output is block `rank` of the input.
          if (coll == theory::Collective::all_gather) s = static_cast<char*>(r) + std::size_t(comm.rank()) * count * es;
          else r = static_cast<char*>(s) + std::size_t(comm.rank()) * count * es;
        }
        if (inplace && coll == theory::Collective::all_to_all) r = recv.data();  // no in-place all_to_all
        fill_send(split ? count * std::size_t(P) : count);
        for (int i = 0; i < a.warmup; ++i) fn(comm, s, r, count);
        comm.barrier();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < a.iters; ++i) fn(comm, s, r, count);
        const double sec = max_over_ranks(comm, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / a.iters);
        double wrong = 0;
        if (a.check && coll == theory::Collective::all_reduce) {  // one more run on fresh crafted input
          fill_send(count);
          fn(comm, s, r, count);
          wrong = double(wrong_in(r, count));
          comm.all_reduce(&wrong, &wrong, 1, DType::f64, ReduceOp::sum);
        }
        const double bytes = theory::collective_bytes(coll, P, double(count * es));
        const double algbw = bytes / sec / 1e9, busbw = algbw * theory::busbw_factor(coll, P);
        report[inplace][0] = sec * 1e6;
        report[inplace][1] = algbw;
        report[inplace][2] = busbw;
        report[inplace][3] = wrong;
        json_row[inplace] = {{"bytes", std::uint64_t(bytes)}, {"count", count}, {"inplace", bool(inplace)},
                             {"time_us", sec * 1e6}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"wrong", wrong}};
      }
      if (comm.rank() == 0) {
        std::snprintf(line, sizeof line, "%12llu  %12zu  %8s  %6s  %7.1f  %6.2f  %6.2f  %6.0f  %7.1f  %6.2f  %6.2f  %6.0f\n",
                      static_cast<unsigned long long>(json_row[0]["bytes"].get<std::uint64_t>()), count,
                      std::string(dtype_name(t)).c_str(), a.op.c_str(), report[0][0], report[0][1], report[0][2],
                      report[0][3], report[1][0], report[1][1], report[1][2], report[1][3]);
        out << line << std::flush;
        rows.push_back(json_row[0]);
        rows.push_back(json_row[1]);
        bw = std::max(bw, measure_bandwidth());
      }
      comm.barrier();
    }
  });
  if (!result.ok()) {
    std::cerr << "dtlab bench: " << result.error << "\n";
    return 1;
  }
  std::unique_ptr<Trace> gathered = trace ? backend.gather(*trace) : nullptr;
  if (!backend.root) return 0;  // under MPI, rank 0 reports for everyone
  const double ceiling = ceiling_of(bw);
  double best_busbw = 0;
  double total_wrong = 0;
  for (const auto& r : rows) {
    best_busbw = std::max(best_busbw, r["busbw_GBps"].get<double>());
    total_wrong += r["wrong"].get<double>();
  }
  std::snprintf(line, sizeof line,
                "# best busbw %.2f GB/s = %.0f%% of the ceiling %.2f GB/s (best memcpy %.2f GB/s seen during the run);"
                "  #wrong total %.0f\n",
                best_busbw, 100 * best_busbw / (ceiling / 1e9), ceiling / 1e9, bw / 1e9, total_wrong);
  out << line;
  if (sweep.rounded)
    out << "# note: sizes rounded to a multiple of " << unit << " B (" << unit_is << "); the size column shows what ran\n";
  if (trace) write_chrome_trace(gathered ? *gathered : *trace, a.trace_path);
  if (!a.json_path.empty()) {
    nlohmann::json j = {{"collective", a.collective}, {"impl", a.impl}, {"backend", backend.name}, {"ranks", P},
                        {"dtype", std::string(dtype_name(t))}, {"op", a.op}, {"memcpy_GBps", bw / 1e9},
                        {"ceiling_busbw_GBps", ceiling / 1e9}, {"rows", rows}};
    if (json_only_stdout) {
      std::cout << j.dump(2) << "\n";
    } else {
      write_text_file(a.json_path, j.dump(2) + "\n", "--json");
    }
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  CLI::App* b = app.add_subcommand("bench", "Sweep a collective's sizes, nccl-tests style");
  auto a = std::make_shared<BenchArgs>();
  b->add_option("collective", a->collective, "all_reduce reduce_scatter all_gather broadcast reduce all_to_all")
      ->check(CLI::IsMember({"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"}))
      ->capture_default_str();
  b->add_option("--impl", a->impl, "library (the backend's own) or a point-to-point algorithm")
      ->check(CLI::IsMember({"library", "ring", "tree", "rhd", "naive"}))
      ->capture_default_str();
  b->add_option("--ranks,-r", a->ranks, "Number of ranks (threads: default 4; mpi: as started by mpirun)")
      ->check(whole_range(1, 4096));
  b->add_option("--backend", a->backend, "threads; mpi under mpirun/srun; nccl (a GPU per rank)")
      ->check(CLI::IsMember({"threads", "mpi", "nccl"}))
      ->capture_default_str();
  b->add_option("--device", a->device, "Where the buffers live: cpu (default), or cuda (rank r on GPU r mod count; "
                                      "implied by --backend nccl)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  b->add_option("-b,--minbytes", a->min_bytes, "Smallest size (K/M/G = powers of 1024)")->capture_default_str();
  b->add_option("-e,--maxbytes", a->max_bytes, "Largest size")->capture_default_str();
  b->add_option("-f,--stepfactor", a->factor, "Multiply the size by this each step")->capture_default_str();
  b->add_option("-n,--iters", a->iters, "Timed iterations per size")->check(whole_range(1, 1000000))->capture_default_str();
  b->add_option("-w,--warmup_iters", a->warmup, "Untimed iterations first")->check(whole_range(0, 1000000))->capture_default_str();
  b->add_option("-c,--check", a->check, "Check results (0/1)")->check(whole_range(0, 1))->capture_default_str();
  b->add_option("--dtype,-d", a->dtype, "f32 f64 i32 i64 f16 bf16")->capture_default_str();
  b->add_option("--op,-o", a->op, "sum avg max min")->capture_default_str();
  b->add_option("--json", a->json_path, "Write the results as JSON to this file ('-': stdout, table to stderr)");
  b->add_option("--trace", a->trace_path, "Record events and write a Chrome trace (measures tracing's cost)");
  b->add_option("--timeout", a->timeout_s, "Watchdog seconds")->check(finite_range(0.001, 1e6))->capture_default_str();
  b->add_option("--link", a->link, "Emulate an interconnect: nvlink4 nvlink3 pcie5 pcie4 ib-ndr ib-hdr eth100");
  b->add_option("--link-bw", a->link_bw, "Emulated link bandwidth, GB/s per direction")->check(finite_range(1e-6, 1e6));
  b->add_option("--link-latency", a->link_latency, "Emulated link latency, microseconds")->check(finite_range(0, 1e9));
  return [a] { return run_bench(*a); };
}

}  // namespace dtl::cli
