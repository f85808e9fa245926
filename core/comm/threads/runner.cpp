// run_threads: start the ranks, watch them, and turn failures into a RunResult.
//
// The calling thread is the watchdog: every 20 ms it checks whether any rank or comm
// stream made progress (a transfer or collective completed). After `timeout_s` without
// progress while every live rank waits on communication (a rank that computes is slow, not
// stuck), it aborts the world with a description of what every rank waits on, e.g.
//   "rank 1 waits recv from rank 0 tag 3 (256 B)".
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/comm/threads/threads_comm.h"
#include "core/trace/run_clock.h"
#include "core/util/units.h"

namespace dtl {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The process's address space in use now (/proc/self/statm's first field), 0 if unknown.
double address_space_in_use() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0;
  if (!(statm >> pages)) return 0;
  return pages * double(sysconf(_SC_PAGE_SIZE));
}

// A thread rank is two threads, the rank and its comm stream, each with a stack
// (RLIMIT_STACK, 8 MiB by default) reserved in the address space, and malloc gives new
// threads arenas of their own (64 MiB reserved each, kMallocArenas at most). Under an
// address-space limit (ulimit -v) they must fit in what is left; a thread-count limit
// (ulimit -u) counts every thread. Refused before any thread starts, with the most that fit.
}  // namespace

void require_thread_room(int P, double other_bytes_per_rank) {
  rlimit stack{};
  const double stack_bytes =
      getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY ? double(stack.rlim_cur) : 8 * kMiB;
  const double threads = 2.0 * P;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const double left = double(as.rlim_cur) - address_space_in_use();
    const double max_arenas = kMallocArenas + 1;  // (mallopt in main; the main arena is one more)
    // stacks (+ a guard page and bookkeeping, rounded up), arenas, and what the caller adds per
    // rank (a trace's tables: counted here, the figure suggested still runs once they exist)
    const auto need = [&](int p) {
      return 2.0 * p * (stack_bytes + kMiB) + std::min(2.0 * p, max_arenas) * 64 * kMiB + p * other_bytes_per_rank;
    };
    int fit = P;
    while (fit > 0 && need(fit) > left) --fit;
    if (fit == 0)
      throw UsageError(
          "this process's address-space limit (ulimit -v) leaves no room for the threads of even one rank (" +
          std::to_string(int(need(1) / kMiB)) + " MiB of stacks and malloc arenas); raise the limit");
    if (P > fit) {
      // The figure suggested must run in the next process too, where malloc's arenas may already
      // be in the address space at this check (threads started earlier) and are then counted twice:
      // it leaves room for all of them once more.
      int suggest = fit;
      while (suggest > 1 && need(suggest) + max_arenas * 64 * kMiB > left) --suggest;
      char msg[320];
      std::snprintf(msg, sizeof msg,
                    "--ranks %d needs %d threads (a rank and its comm stream each), %.0f MiB of stack each, and "
                    "this process's address-space limit (ulimit -v) leaves room for about %d ranks; use --ranks %d "
                    "or fewer, raise the limit, or use --backend mpi",
                    P, 2 * P, stack_bytes / kMiB, suggest, suggest);
      throw UsageError(msg);
    }
  }
  // Resident: about 1 MiB per thread once it has run (1024 ranks held 2.2 GB here).
  require_memory(threads * kMiB + P * other_bytes_per_rank, "--ranks (each rank is two threads)");
  rlimit nproc{};
  if (getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY && threads > double(nproc.rlim_cur))
    throw UsageError("--ranks " + std::to_string(P) + " needs " + std::to_string(2 * P) +
                     " threads, more than this "
                     "user's limit of " +
                     std::to_string(nproc.rlim_cur) + " (ulimit -u); use --ranks " +
                     std::to_string(std::max<long>(1, long(nproc.rlim_cur) / 2 - 8)) + " or fewer, or --backend mpi");
}

namespace {

// What the rank threads share with the watchdog.
struct RankThreads {
  const ThreadsOptions& opt;
  threads::Universe& universe;
  std::shared_ptr<threads::Group> world;
  RunResult& result;
  std::atomic<int> running;
  std::mutex first_failure_mu;

  // Rank r's thread: the lab's body on its Comm; a failure aborts the world (the first one's
  // exception is kept to rethrow), then the rank is marked finished.
  void run_rank(int r, const std::function<void(Comm&)>& body) {
    // Linux nices one thread when given its thread id. Raising a nice level needs no
    // privilege; if it still fails the run goes on at equal priority.
    if (opt.compute_nice > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), opt.compute_nice);
    const RunClock::Install clock(opt.gate);  // a stepped run's clocks leave out the learner's pauses
    {
      threads::ThreadsComm comm(world, r);
      try {
        body(comm);
      } catch (const Aborted& e) { result.rank_errors[std::size_t(r)] = e.what(); } catch (const std::exception& e) {
        result.rank_errors[std::size_t(r)] = e.what();
        {
          std::lock_guard lock(first_failure_mu);
          if (!result.first_failure) result.first_failure = std::current_exception();
        }
        universe.abort(r, e.what());
      } catch (...) {
        result.rank_errors[std::size_t(r)] = "unknown exception";
        universe.abort(r, "unknown exception");
      }
    }
    {
      threads::RankState& rs = universe.rank_state(r);
      std::lock_guard lock(rs.mu);
      rs.finished = true;
    }
    if (opt.gate) opt.gate->finish(r);
    universe.note_progress();
    running.fetch_sub(1);
  }

  // Runs until every rank has returned and every comm stream is idle; after --timeout
  // without progress while no rank computes, aborts the world saying what each waits on.
  void watch() {
    std::uint64_t last_progress = universe.progress();
    auto last_change = std::chrono::steady_clock::now();
    bool said_still_waiting = false;  // once per stall
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (running.load() == 0 && (universe.aborted() || universe.workers_idle())) break;
      const std::uint64_t p = universe.progress();
      const auto now = std::chrono::steady_clock::now();
      const bool paused_by_learner = opt.gate && opt.gate->controller_waiting();
      // A rank computing longer than --timeout (a big step, an emulated --compute-us) is not
      // a hang: only a world where every live rank waits on communication is.
      if (p != last_progress || paused_by_learner || universe.aborted() || universe.any_rank_computing()) {
        last_progress = p;
        last_change = now;
        said_still_waiting = false;
      } else if (const double stalled = std::chrono::duration<double>(now - last_change).count();
                 !said_still_waiting && opt.still_waiting_s > 0 && stalled > opt.still_waiting_s &&
                 (opt.timeout_s <= 0 || stalled < opt.timeout_s)) {
        said_still_waiting = true;
        const std::string message = "still waiting: no rank made progress for " + format_g(std::round(stalled)) +
                                    " s (the watchdog stops the run at --timeout " + format_g(opt.timeout_s) +
                                    " s):\n  " + universe.describe_blocked() + "\n";
        if (opt.say_still_waiting)
          opt.say_still_waiting(message);
        else
          std::fputs(message.c_str(), stderr);
      } else if (opt.timeout_s > 0 && stalled > opt.timeout_s) {
        result.watchdog_fired = true;
        universe.abort(-1, "no rank made progress for " + format_g(opt.timeout_s) + " s (--timeout):\n  " +
                               universe.describe_blocked());
      }
    }
  }

  // A fault or hang asked for a rank that never got that far is an option without effect.
  void require_faults_fired() const {
    for (int r : {opt.faults.fault_rank, opt.faults.hang_rank}) {
      if (r < 0 || r >= opt.world_size) continue;
      const threads::RankState& rs = universe.rank_state(r);
      const int made =
          opt.faults.counted == StepUnit::transfers ? rs.sends_posted.load() : rs.collectives_posted.load();
      if (const std::string why = opt.faults.unfired(r, made); !why.empty()) throw UsageError(why);
    }
  }
};

void require_valid(const ThreadsOptions& opt) {
  constexpr int kMaxRanks = 4096;
  if (opt.world_size < 1 || opt.world_size > kMaxRanks)
    throw UsageError("--ranks must be between 1 and " + std::to_string(kMaxRanks) + " for the threads backend, got " +
                     std::to_string(opt.world_size));
  if (opt.trace && opt.trace->world_size() != opt.world_size)
    throw UsageError("the trace was made for " + std::to_string(opt.trace->world_size()) + " ranks, not " +
                     std::to_string(opt.world_size));
  require_thread_room(opt.world_size);
}

}  // namespace

RunResult run_threads(const ThreadsOptions& opt, const std::function<void(Comm&)>& body) {
  require_valid(opt);
  threads::Universe universe(opt);
  if (opt.gate && opt.trace) opt.trace->leave_out_pauses(opt.gate);
  std::vector<int> all(std::size_t(opt.world_size));
  for (int i = 0; i < opt.world_size; ++i) all[std::size_t(i)] = i;
  RunResult result;
  result.rank_errors.resize(std::size_t(opt.world_size));
  RankThreads ranks{opt, universe, std::make_shared<threads::Group>(universe, all), result, {opt.world_size}, {}};
  std::vector<std::thread> threads;
  threads.reserve(std::size_t(opt.world_size));
  std::string start_failure;  // the system would not make another thread
  for (int r = 0; r < opt.world_size && start_failure.empty(); ++r) {
    try {
      threads.emplace_back([&ranks, &body, r] { ranks.run_rank(r, body); });
    } catch (const std::system_error& e) {  // the ranks already started stop at the abort
      start_failure = "could not start the thread of rank " + std::to_string(r) + " (" + e.what() +
                      "): " + std::to_string(r) + " of " + std::to_string(opt.world_size) +
                      " rank threads fit in this process";
      universe.abort(r, start_failure);
      ranks.running.fetch_sub(opt.world_size - r);  // those never started never finish
    }
  }
  ranks.watch();
  for (auto& t : threads) t.join();
  universe.join_workers();
  if (!start_failure.empty())
    throw UsageError(start_failure + "; use fewer --ranks (each is a thread and a comm stream), or --backend mpi");
  if (!universe.aborted()) ranks.require_faults_fired();
  if (universe.aborted()) {
    result.failed_rank = universe.failed_rank();
    result.error = result.failed_rank >= 0
                       ? "rank " + std::to_string(result.failed_rank) + " failed: " + universe.abort_reason()
                       : "watchdog: " + universe.abort_reason();
  }
  return result;
}

}  // namespace dtl
