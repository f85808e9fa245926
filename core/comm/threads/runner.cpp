// run_threads: start the ranks, watch them, and turn failures into a RunResult.
//
// The calling thread is the watchdog: every 20 ms it checks whether any rank or comm
// stream made progress (a transfer or collective completed). After `timeout_s` without
// progress it aborts the world with a description of what every rank waits on, e.g.
//   "rank 1 waits recv from rank 0 tag 3 (256 B)".
#include <sys/resource.h>
#include <unistd.h>
#include <mutex>
#include <thread>

#include "core/comm/threads/threads_comm.h"

namespace dtl {

RunResult run_threads(const ThreadsOptions& opt, const std::function<void(Comm&)>& body) {
  constexpr int kMaxRanks = 4096;
  if (opt.world_size < 1 || opt.world_size > kMaxRanks)
    throw UsageError("--ranks must be between 1 and " + std::to_string(kMaxRanks) + " for the threads backend, got " +
                     std::to_string(opt.world_size));
  if (opt.trace && opt.trace->world_size() != opt.world_size)
    throw UsageError("the trace was made for " + std::to_string(opt.trace->world_size()) + " ranks, not " +
                     std::to_string(opt.world_size));

  threads::Universe universe(opt);
  std::vector<int> all(std::size_t(opt.world_size));
  for (int i = 0; i < opt.world_size; ++i) all[std::size_t(i)] = i;
  auto world = std::make_shared<threads::Group>(universe, all);

  RunResult result;
  result.rank_errors.resize(std::size_t(opt.world_size));
  std::atomic<int> running{opt.world_size};
  std::mutex first_failure_mu;
  std::vector<std::thread> threads;
  threads.reserve(std::size_t(opt.world_size));
  for (int r = 0; r < opt.world_size; ++r) {
    threads.emplace_back([&, r] {
      // Linux nices one thread when given its thread id. Raising a nice level needs no
      // privilege; if it still fails the run goes on at equal priority.
      if (opt.compute_nice > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), opt.compute_nice);
      {
        threads::ThreadsComm comm(world, r);
        try {
          body(comm);
        } catch (const Aborted& e) {
          result.rank_errors[std::size_t(r)] = e.what();
        } catch (const std::exception& e) {
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
    });
  }

  // Watchdog loop: runs until every rank has returned and every comm stream is idle.
  std::uint64_t last_progress = universe.progress();
  auto last_change = std::chrono::steady_clock::now();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (running.load() == 0 && (universe.aborted() || universe.workers_idle())) break;
    const std::uint64_t p = universe.progress();
    const auto now = std::chrono::steady_clock::now();
    const bool paused_by_learner = opt.gate && opt.gate->controller_waiting();
    if (p != last_progress || paused_by_learner || universe.aborted()) {
      last_progress = p;
      last_change = now;
    } else if (opt.timeout_s > 0 && std::chrono::duration<double>(now - last_change).count() > opt.timeout_s) {
      result.watchdog_fired = true;
      universe.abort(-1, "no rank made progress for " + std::to_string(int(opt.timeout_s)) + " s (--timeout):\n  " +
                             universe.describe_blocked());
    }
  }
  for (auto& t : threads) t.join();
  universe.join_workers();

  if (universe.aborted()) {
    result.failed_rank = universe.failed_rank();
    result.error = result.failed_rank >= 0
                       ? "rank " + std::to_string(result.failed_rank) + " failed: " + universe.abort_reason()
                       : "watchdog: " + universe.abort_reason();
  }
  return result;
}

}  // namespace dtl
