// What `dtlab bench` decides before any rank starts: its options, the sweep of sizes
// (rounded to whole elements per rank, at most kMaxSweepSizes), the operation under test,
// the backend and where the buffers live. Usage errors come from here, before anything runs.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/link.h"
#include "core/theory/collectives.h"
#include "labs/cli/backend.h"

namespace dtl::cli {

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
  std::string protocol;  // --protocol on the emulated link
  double timeout_s = 120;
  std::string algo;               // --algo auto: print NCCL's predicted choice instead of running
  std::string gpu = "h100-sxm5";  //   its GPU profile (core/theory/gpu_profile.h)
  int per_node = 8;               //   ranks per node
  int channels = 0;  // --channels (0: not given): NCCL's channels (ring_sliced, double_tree; --algo auto: the fabric's)
  double skew = 0;   // all_to_allv: rank 0 receives this many times any other rank's share (0: not given, even)
};

// The sizes of the sweep: -b, -b·f, -b·f², ... up to -e, each rounded down to a multiple
// of `unit` (what one run moves at least: an element, or one per rank when the collective
// splits the buffer P ways) and never below it. `rounded` says whether any size changed.
struct Sweep {
  std::vector<std::uint64_t> sizes;
  bool rounded = false;
};

// `channels`: the rank's NCCL channels (Comm::split_channels) for --impl ring_sliced and
// double_tree; {&comm} without --channels.
using OpFn = std::function<void(Comm&, std::span<Comm* const> channels, void* send, void* recv, std::size_t count)>;

// Everything decided before the ranks start: what runs, on which sizes, where.
struct BenchPlan {
  CollectiveKind coll = CollectiveKind::all_reduce;
  DType t = DType::f32;
  ReduceOp op = ReduceOp::sum;
  Backend backend;
  LinkSpec link;
  int P = 1;
  std::size_t es = 4;
  bool split = false;             // all_gather / reduce_scatter / all_to_all(v) split `size` P ways
  double skew = 1;                // all_to_allv: rank 0's share over any other's (1: all_to_all's layout)
  std::size_t recv_elements = 0;  // the receive buffer: the largest size, or all_to_allv's hot rank's
  std::uint64_t unit = 4;         // sizes are multiples of this
  std::string unit_is;
  Sweep sweep;
  bool on_gpu = false;
  bool ping_pong = false;  // `dtlab bench ping_pong`: send/recv between ranks 0 and 1, no fn
  int channels = 1;        // the channels fn runs on (--channels)
  OpFn fn;
};

// all_to_allv's layout in the bench: each rank sends P·count elements, rank 0 (the hot
// expert's rank) `skew` times the share of each other rank (the remainder of the rounding to
// rank 0 too); every rank sends the same counts, so rank 0 receives P times its share.
AllToAllvLayout skewed_all_to_allv(int P, int me, std::size_t count, double skew);

// Validates every option (UsageError naming it) and plans the run; a.device may become
// "cuda" (--backend nccl implies it).
BenchPlan plan_bench(BenchArgs& a);

// `dtlab bench ping_pong` (bench_ping_pong.cpp): the point-to-point sweep, one way =
// round trip / 2. Returns the exit code.
int run_ping_pong(const BenchArgs& a, const BenchPlan& p);

// `dtlab bench all_reduce --algo auto` (bench_auto.cpp): the table of predicted times per
// size from core/theory/nccl_model.h, algorithm × protocol, the winner marked and why.
int run_bench_auto(const BenchArgs& a);

// A bench's JSON report `j`, with the emulated link when one is set: on stdout for
// --json -, else written to `path` as every dtlab file is (core/util/files.h).
void emit_bench_json(nlohmann::json j, const LinkSpec& link, const std::string& path);

}  // namespace dtl::cli
