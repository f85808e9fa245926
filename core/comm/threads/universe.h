// Internal to the threads backend: state shared by every group of one world.
//
// Universe owns what must be world-wide: the abort flag (a failing rank stops every
// group), the progress counter the watchdog reads, what each rank is blocked on, the
// fault plan and the step gate. Every blocking wait in the backend goes through
// Universe::wait_until, which polls the abort flag, so no thread can hang after an abort.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/run_clock.h"
#include "core/trace/step_gate.h"
#include "core/trace/trace.h"

namespace dtl::threads {

// Which thread of a rank is waiting: its own (main) or its collective worker (comm). (Not the
// trace vocabulary's dtl::Role.)
enum class Waiter { main = 0, comm = 1 };

struct RankState {
  std::mutex mu;  // guards the strings and pairs with cv
  std::condition_variable cv;
  std::string blocked_on[2];  // per Waiter; empty = running
  bool finished = false;
  std::atomic<int> sends_posted{0};        // for FaultPlan steps
  std::atomic<int> collectives_posted{0};  // likewise, when the plan counts collectives
};

// A rank's comm stream: a thread that runs its collectives in issue order, so async
// collectives progress while the rank computes. Owned by the Universe (not the Comm)
// so a rank that unwinds an error never waits on its own worker.
struct WorkQueue {
  struct Task {
    std::function<void()> run;
    RunClock::time_point posted_at;  // the poster's run time (a stepped run's comm stream starts it no earlier)
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> tasks;
  bool stop = false;
  bool busy = false;  // a task is running
  void push(std::function<void()> task);
};

// Creates threads on a thread of its own. Linux threads inherit their creator's nice
// level, and the rank threads run niced (ThreadsOptions::compute_nice), so the comm
// streams and the link timer are created here, at the priority run_threads was called with.
class ThreadSpawner {
 public:
  ThreadSpawner();
  ~ThreadSpawner();
  std::thread spawn(std::function<void()> fn);

 private:
  struct Request {
    std::function<void()> fn;
    std::promise<std::thread> made;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> requests_;
  bool stop_ = false;
  std::thread thread_;
};

// Completes work at given times: the emulated link's transfers finish when the α-β model
// says, not when memcpy did.
class LinkTimer {
 public:
  explicit LinkTimer(ThreadSpawner& spawner) : spawner_(spawner) {}
  ~LinkTimer();
  void at(std::chrono::steady_clock::time_point when, std::function<void()> fn);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> due_;
  bool stop_ = false;
  ThreadSpawner& spawner_;
  std::thread thread_;
};

class Universe {
 public:
  Universe(const ThreadsOptions& opt);

  // Emulated link: when a transfer of `bytes` from src to dst on `channel`, starting now,
  // would end. Per tier (a GPU's NVLink ports and its NIC are separate, so intra- and
  // inter-node messages of one rank do not queue behind each other):
  //   a channel is a connection: its messages go one after the other, each α then bytes/β;
  //   a rank's send and receive directions carry the bytes of one message at a time, so the
  //   channels of a rank share its bandwidth but overlap their latencies: one channel's α
  //   passes while another's bytes move. One channel: α + bytes/β per message, FIFO.
  const LinkSpec& link() const { return link_; }      // the one link, or the intra-node one
  const NodeLayout& nodes() const { return nodes_; }  // two tiers, or one (gpus_per_node 0)
  std::chrono::steady_clock::time_point schedule_transfer(int src, int dst, std::size_t bytes, int channel = 0);
  LinkTimer& link_timer() { return link_timer_; }

  int size() const { return size_; }
  Trace* trace() const { return trace_; }
  StepGate* gate() const { return gate_; }
  const FaultPlan& faults() const { return faults_; }
  RankState& rank_state(int g) { return *ranks_[std::size_t(g)]; }

  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // First caller wins; wakes every waiter. failed_rank = -1 for the watchdog.
  void abort(int failed_rank, const std::string& why);
  [[noreturn]] void throw_aborted(int me) const;
  int failed_rank() const;
  std::string abort_reason() const;

  void note_progress() { progress_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }

  // Blocks rank g's `role` thread until done() is true; `what` is shown by the
  // watchdog ("recv from rank 0 tag 3"). Throws Aborted when the world aborts.
  void wait_until(int g, Waiter role, const std::function<bool()>& done, const std::string& what);
  // Sleeps until `when` (precisely, unlike wait_until's polling), still stopping on abort.
  void sleep_until(int g, std::chrono::steady_clock::time_point when);
  // Wake rank g's waiters after changing what their done() reads.
  void wake(int g);

  // Starts a comm-stream thread; it exits once stopped and drained (join_workers).
  std::shared_ptr<WorkQueue> start_worker();
  void stop_workers();  // ask every worker to exit once its queue is empty
  void join_workers();
  bool workers_idle();  // every queue empty and no task running

  // "rank 0: waits recv from rank 3 tag 0 | rank 1: finished | ..." for the watchdog.
  std::string describe_blocked();
  // Whether some rank that has not finished is computing (its main thread not waiting on a
  // request): then the run is slow, not stuck, and the watchdog waits for it.
  bool any_rank_computing();

 private:
  std::function<void()> worker_loop(std::shared_ptr<WorkQueue> q) const;  // a comm stream's body
  ThreadSpawner spawner_;  // first member: the threads below are made by it
  int size_;
  Trace* trace_;
  StepGate* gate_;
  FaultPlan faults_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mu_;
  int failed_rank_ = -1;
  std::string abort_reason_;
  std::atomic<std::uint64_t> progress_{0};
  std::mutex workers_mu_;
  std::vector<std::pair<std::shared_ptr<WorkQueue>, std::thread>> workers_;
  LinkSpec link_;
  NodeLayout nodes_;
  std::mutex link_mu_;
  // [tier][rank]: when each rank's send and receive sides are next free (tier 1: between nodes)
  std::vector<std::chrono::steady_clock::time_point> send_free_[2], recv_free_[2];
  // {tier, rank, channel}: when each channel's connection on a rank's side is next free
  std::map<std::array<int, 3>, std::chrono::steady_clock::time_point> channel_send_free_, channel_recv_free_;
  LinkTimer link_timer_;  // last member: its thread stops before the rest is destroyed
};

// A reusable barrier for the members of one group that gives up on abort.
class GroupBarrier {
 public:
  explicit GroupBarrier(int n) : n_(n) {}
  // `members` are the group's global ranks (the ones to wake).
  void arrive_and_wait(Universe& u, const std::vector<int>& members, int g, Waiter role, const std::string& what);

 private:
  int n_;
  std::mutex mu_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  // Run time (core/trace/run_clock.h) of the latest arrival of this generation, and of the
  // last completed one: a stepped run's members go on from when the last one arrived.
  RunClock::time_point latest_arrival_{}, released_at_{};
};

}  // namespace dtl::threads
