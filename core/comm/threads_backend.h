// The threads backend: N ranks as N threads of this process (always built).
//
// It is what makes step-through, tests without a GPU and the live visualizer possible.
// Point-to-point messages are a rendezvous: whichever side arrives second copies the
// data straight from the sender's buffer into the receiver's (one copy, like CMA).
// Library collectives use shared memory directly: every rank publishes its buffers and
// reduces its own 1/P of the data from all inputs into all outputs, so each input byte
// is read once and each output byte written once — the physical minimum.
//
//   dtl::ThreadsOptions opt{.world_size = 4};
//   auto result = dtl::run_threads(opt, [](dtl::Comm& comm) { ... });
//   if (!result.ok()) std::cerr << result.error << "\n";
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/link.h"
#include "core/trace/vocab.h"

namespace dtl {

class Trace;
class StepGate;

// --inject-fault / --inject-hang: make one rank fail or go silent at its n-th send, or at
// its n-th library collective for labs built on them (DDP: its n-th all-reduce).
struct FaultPlan {
  StepUnit counted = StepUnit::transfers;  // what the steps below count: sends, or library collectives
  int fault_rank = -1;                     // this rank throws...
  int fault_step = 0;                      // ...when it posts operation number fault_step (0 = first)
  int hang_rank = -1;                      // this rank stops communicating...
  int hang_step = 0;                       // ...from its operation number hang_step on

  enum class Action { none, fail, hang };
  // What `rank` does at its n-th operation of kind `kind`.
  Action at(StepUnit kind, int rank, int n) const {
    if (kind != counted) return Action::none;
    if (rank == fault_rank && n == fault_step) return Action::fail;
    if (rank == hang_rank && n >= hang_step) return Action::hang;
    return Action::none;
  }
  // A fault or hang the run ended without (its rank made fewer operations): the UsageError
  // to throw, naming the rank's count, or "" when every planned one fired. (It used to end
  // "OK", the fault silently a no-op: `--ranks 1 --inject-fault 0:0` sends nothing.)
  std::string unfired(int rank, int operations_made) const {
    const bool fault = rank == fault_rank && operations_made <= fault_step;
    const bool hang = rank == hang_rank && operations_made <= hang_step;
    if (!fault && !hang) return {};
    const char* what = counted == StepUnit::transfers ? "sends" : "library collectives";
    const std::string head = std::string(fault ? "--inject-fault " : "--inject-hang ") + std::to_string(rank) + ":" +
                             std::to_string(fault ? fault_step : hang_step) + " never fired: rank " +
                             std::to_string(rank);
    if (operations_made == 0) return head + " made no " + what + " in this run; choose a rank that does";
    return head + " made " + std::to_string(operations_made) + " " + what + " in this run; give a STEP below " +
           std::to_string(operations_made);
  }
  // "send #3", "all_reduce #3": the operation, for the messages.
  static std::string operation(const char* what, int n) { return std::string(what) + " #" + std::to_string(n); }
};

// The malloc arenas dtlab's programs allow (mallopt M_ARENA_MAX in their main): each is
// 64 MiB of address space, and thread ranks would otherwise get up to 8 per core.
inline constexpr int kMallocArenas = 4;

struct ThreadsOptions {
  int world_size = 1;
  Trace* trace = nullptr;    // where events go (null: tracing off)
  StepGate* gate = nullptr;  // non-null: stepping mode
  FaultPlan faults;
  double timeout_s = 60.0;  // watchdog: abort when no rank makes progress this long (<= 0: off)
  // After this long without progress the watchdog says once, on stderr, what each rank waits
  // on ("still waiting: ..."), so a deadlock is named in seconds, not at --timeout (<= 0: never).
  double still_waiting_s = 2.0;
  // Where that message and its lines go (null: stderr as it is). `dtlab run` wraps it to the
  // terminal's width, as every report line is.
  std::function<void(const std::string&)> say_still_waiting;
  LinkSpec link;     // emulated interconnect (inactive: transfers at memory speed);
                     // ignored while stepping, where a person sets the pace
  NodeLayout nodes;  // two tiers (--topology): `link` within a node, nodes.inter between nodes
  // Rank threads (the "compute streams") run at this nice level above the comm-stream
  // threads, so a collective launched during backward gets the cores the moment it is
  // ready, as on a GPU where NCCL runs beside the compute kernels on a high-priority
  // stream. Without it, on a machine with fewer cores than threads, the bucketed DDP
  // all-reduces queue behind backward and show up as exposed time. 0 (the default): equal
  // priority, right for runs where ranks only communicate (benchmarks): niced ranks would
  // just lose the cores to other programs. `dtlab run` sets 10 for labs that compute.
  int compute_nice = 0;
};

struct RunResult {
  int failed_rank = -1;  // first rank that threw (-1: none, or the watchdog)
  bool watchdog_fired = false;
  std::string error;                     // the first error, empty when every rank succeeded
  std::vector<std::string> rank_errors;  // what each rank saw ("" = returned normally)
  std::exception_ptr first_failure;      // the failed rank's exception (to rethrow a UsageError)
  bool ok() const { return error.empty(); }
};

// Runs body(comm) on world_size threads and returns once every rank has returned.
// Never throws for a rank's failure: a failing rank aborts its peers (each returns
// within a second) and the result names it. Throws UsageError for bad options.
RunResult run_threads(const ThreadsOptions& options, const std::function<void(Comm&)>& body);

// The room `ranks` thread ranks need (two threads each: stacks under ulimit -v, resident
// memory, ulimit -u), plus `other_bytes_per_rank` the caller allocates per rank (a trace's
// tables): UsageError naming --ranks. run_threads checks it too; a caller that allocates
// per rank before the run calls it first, so a refusal costs nothing.
void require_thread_room(int ranks, double other_bytes_per_rank = 0);

}  // namespace dtl
