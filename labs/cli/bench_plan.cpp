// `dtlab bench`: the plan (bench_plan.h) — options checked, sizes, the operation.
#include "labs/cli/bench_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/util/files.h"
#include "core/util/units.h"
#include "exercises/collectives.h"
#include "kernels/cuda/device.h"

namespace dtl::cli {

namespace {

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
    throw UsageError("-f " + factor_text(a.factor) +
                     ": the step factor must be a finite number > 1 (any finite number "
                     "when -b equals -e)");
}

Sweep plan_sweep(const BenchArgs& a, std::uint64_t lo, std::uint64_t hi, std::uint64_t unit,
                 const std::string& unit_is) {
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
    const double min_factor =
        std::ceil(std::pow(double(hi) / double(lo), 1.0 / double(kMaxSweepSizes - 1)) * 1e4) / 1e4;
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "-f %s from -b %s to -e %s would be %.0f sizes, more than the %zu allowed; use -f %.4f or more, or "
                  "a narrower -b..-e range",
                  factor_text(a.factor).c_str(), a.min_bytes.c_str(), a.max_bytes.c_str(), n, kMaxSweepSizes,
                  min_factor);
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

// The operation under test. Point-to-point algorithms work in place; their out-of-place
// form copies the input to the output first, as a user of them would.
OpFn make_op(const BenchArgs& a, CollectiveKind coll, int P, DType t, ReduceOp op, double skew) {
  using C = CollectiveKind;
  if (a.impl == "library") {
    switch (coll) {
      case C::all_reduce:
        return
            [t, op](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) { c.all_reduce(s, r, n, t, op); };
      case C::reduce_scatter:
        return [t, op](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) {
          c.reduce_scatter(s, r, n, t, op);
        };
      case C::all_gather:
        return [t](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) { c.all_gather(s, r, n, t); };
      case C::broadcast:
        return [t](Comm& c, std::span<Comm* const>, void*, void* r, std::size_t n) { c.broadcast(r, n, t, 0); };
      case C::reduce:
        return
            [t, op](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) { c.reduce(s, r, n, t, op, 0); };
      case C::all_to_all:
        return [t](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) { c.all_to_all(s, r, n, t); };
      case C::all_to_allv:
        return [t, skew](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) {
          c.all_to_allv(s, r, skewed_all_to_allv(c.size(), c.rank(), n, skew), t);
        };
      case C::none:
      case C::barrier: break;  // parse_bench_collective lets neither through
    }
  }
  if (coll != C::all_reduce)
    throw UsageError("--impl " + a.impl + " is built for all_reduce only; use --impl library for " + a.collective);
  ex::require_supported_world(P);
  // NCCL's algorithms run on `on`: the rank's --channels (one: the comm itself), each channel's
  // N/C bytes in slices (ring) or chunks (trees) of about 256 KiB.
  if (a.impl == "ring_sliced")  // the ring pipelined in slices (theory::ring_slices)
    return [t, op](Comm& c, std::span<Comm* const> on, void* s, void* r, std::size_t n) {
      if (s != r) copy_bytes(r, s, n * dtype_size(t));
      const int S = theory::ring_slices(double(n * dtype_size(t)) / double(on.size()) / c.size());
      ex::ring_sliced_all_reduce_channels(on, ex::BufferView{r, n, t}, op, S);
    };
  if (a.impl == "double_tree")  // NCCL's two trees, halves pipelined in chunks
    return [t, op](Comm&, std::span<Comm* const> on, void* s, void* r, std::size_t n) {
      if (s != r) copy_bytes(r, s, n * dtype_size(t));
      const int K = theory::double_tree_chunks(double(n * dtype_size(t)) / double(on.size()));
      ex::double_tree_all_reduce_channels(on, ex::BufferView{r, n, t}, op, K);
    };
  std::function<void(Comm&, ex::BufferView, ReduceOp)> fn = a.impl == "ring"   ? ex::ring_all_reduce
                                                            : a.impl == "tree" ? ex::tree_all_reduce
                                                            : a.impl == "rhd"  ? ex::rhd_all_reduce
                                                                               : ex::naive_all_reduce;
  return [fn, t, op](Comm& c, std::span<Comm* const>, void* s, void* r, std::size_t n) {
    if (s != r) copy_bytes(r, s, n * dtype_size(t));  // host or device memory
    fn(c, ex::BufferView{r, n, t}, op);
  };
}

// ping_pong's own rules: no algorithm, no reduction, host buffers, 2 ranks unless told.
void plan_ping_pong(BenchArgs& a) {
  if (a.impl != "library")
    throw UsageError("--impl " + a.impl + ": ping_pong is one send and one receive, there is no algorithm to choose");
  if (a.op != "sum")
    throw UsageError("--op " + a.op + ": ping_pong sends the bytes back unchanged, there is nothing to reduce");
  if (a.backend == "nccl" || a.device == "cuda")
    throw UsageError("ping_pong moves host buffers: use --backend threads or mpi, without --device cuda");
  if (!a.trace_path.empty()) throw UsageError("--trace: ping_pong records no trace; trace an all_reduce sweep instead");
  if (a.ranks == -1 && a.backend == "threads") a.ranks = 2;
}

// --skew belongs to all_to_allv and lies in [1, 1e6].
double plan_skew(const BenchArgs& a, CollectiveKind coll) {
  if (a.skew == 0) return 1;
  if (coll != CollectiveKind::all_to_allv)
    throw UsageError("--skew makes one rank receive more of an all_to_allv; " + a.collective +
                     " has a fixed layout (drop --skew)");
  if (!(a.skew >= 1 && a.skew <= 1e6))
    throw UsageError("--skew " + factor_text(a.skew) + ": give a number from 1 (even) to 1e6");
  return a.skew;
}

// --collective's word, in the vocabulary's names (core/trace/vocab.h): a collective that
// moves bytes (a barrier has none to time).
CollectiveKind parse_bench_collective(const std::string& word) {
  const std::optional<CollectiveKind> c = parse_collective_kind(word);
  if (!c || *c == CollectiveKind::none || *c == CollectiveKind::barrier)
    throw UsageError("unknown collective '" + word +
                     "'; use one of all_reduce reduce_scatter all_gather broadcast reduce all_to_all all_to_allv");
  return *c;
}

}  // namespace

AllToAllvLayout skewed_all_to_allv(int P, int me, std::size_t count, double skew) {
  const std::size_t total = std::size_t(P) * count;
  std::vector<std::size_t> to(static_cast<std::size_t>(P));
  std::size_t given = 0;
  for (int q = 1; q < P; ++q) given += to[std::size_t(q)] = std::size_t(double(total) / (skew + P - 1));
  to[0] = total - given;
  return packed_all_to_allv(to, std::vector<std::size_t>(to.size(), to[std::size_t(me)]));
}

BenchPlan plan_bench(BenchArgs& a) {
  BenchPlan p;
  p.channels = std::max(1, a.channels);
  if (p.channels > 1 && a.impl != "ring_sliced" && a.impl != "double_tree")
    throw UsageError("--channels " + std::to_string(a.channels) +
                     " splits the buffer over NCCL's rings or tree pairs; --impl " + a.impl +
                     " has none: use --impl ring_sliced or double_tree (or --algo auto), or drop --channels");
  p.ping_pong = a.collective == "ping_pong";
  if (p.ping_pong) plan_ping_pong(a);
  p.coll = p.ping_pong ? CollectiveKind::broadcast : parse_bench_collective(a.collective);  // ping_pong: unused
  p.t = parse_dtype(a.dtype);
  p.op = parse_reduce_op(a.op);
  const std::uint64_t lo = parse_size(a.min_bytes, "-b"), hi = parse_size(a.max_bytes, "-e");
  if (lo == 0 || hi < lo) throw UsageError("-b must be > 0 and <= -e");
  check_counts_and_factor(a, lo, hi);
  p.backend = Backend::choose(a.backend, a.ranks);
  p.link = make_link(a.link, a.link_bw, a.link_latency);
  if (!a.protocol.empty()) set_protocol(a.protocol, p.link);
  if (p.link.active() && a.backend != "threads")
    throw UsageError("--link emulates an interconnect between thread ranks only");
  p.P = p.backend.ranks;
  p.es = dtype_size(p.t);
  p.skew = plan_skew(a, p.coll);
  p.split = p.coll == CollectiveKind::reduce_scatter || p.coll == CollectiveKind::all_gather ||
            p.coll == CollectiveKind::all_to_all || p.coll == CollectiveKind::all_to_allv;
  p.unit = p.split ? p.es * std::uint64_t(p.P) : p.es;
  p.unit_is = p.split ? "one " + std::string(dtype_name(p.t)) + " element per rank on " + std::to_string(p.P) + " ranks"
                      : "one " + std::string(dtype_name(p.t)) + " element";
  p.sweep = plan_sweep(a, lo, hi, p.unit, p.unit_is);
  if (p.ping_pong) {
    if (p.P < 2) throw UsageError("ping_pong needs at least 2 ranks (" + std::to_string(p.P) + " given)");
    require_memory(2.0 * double(p.sweep.sizes.back()) * (p.backend.kind == BackendKind::threads ? 2 : 1), "-e");
    return p;  // ranks 0 and 1 hold a send and a receive buffer each
  }
  // Every rank holds a send and a receive buffer of the largest size (thread ranks: all in
  // here); all_to_allv's hot rank receives P times its share.
  const std::size_t largest = std::size_t(p.sweep.sizes.back() / p.es);
  p.recv_elements = p.coll == CollectiveKind::all_to_allv
                        ? skewed_all_to_allv(p.P, 0, largest / std::size_t(p.P), p.skew).recv_extent()
                        : largest;
  require_memory(double(largest + p.recv_elements) * double(p.es) * (p.backend.kind == BackendKind::threads ? p.P : 1),
                 "-e (or --ranks)");
  p.fn = make_op(a, p.coll, p.P, p.t, p.op, p.skew);
  if (a.backend == "nccl") {  // NCCL moves GPU memory only
    if (a.device == "cpu") throw UsageError("--backend nccl moves GPU memory; drop --device cpu (nccl implies cuda)");
    a.device = "cuda";
  }
  p.on_gpu = a.device == "cuda";
  if (p.on_gpu) {
    if (a.backend == "mpi")
      throw UsageError(
          "--device cuda: the Open MPI backend moves host buffers; use --backend nccl, or threads (ranks "
          "sharing GPUs)");
    cuda::use_cuda_memory();  // no GPU or no CUDA build: says so, exit 2
  }
  return p;
}

void emit_bench_json(nlohmann::json j, const LinkSpec& link, const std::string& path) {
  if (link.active())
    j["link"] = {{"name", link.name},
                 {"latency_us", link.latency_us},
                 {"bandwidth_GBps", link.bandwidth_GBps},
                 {"protocol", theory::nccl_proto_name(link.protocol)}};
  if (path == "-")
    std::cout << j.dump(2) << "\n";
  else
    write_text_file(path, j.dump(2) + "\n", "--json");
}

}  // namespace dtl::cli
