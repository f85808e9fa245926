#include "core/comm/threads/universe.h"

#include <algorithm>
#include <system_error>

#include "core/trace/run_clock.h"

namespace dtl::threads {

namespace {
// How often a sleeping thread re-checks the abort flag. Aborts also notify, so this
// only bounds the worst case; it keeps "every rank returns within 1 s" true.
constexpr auto kAbortPoll = std::chrono::milliseconds(20);
}  // namespace

ThreadSpawner::ThreadSpawner() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !requests_.empty(); });
      if (requests_.empty()) return;  // stopped
      Request r = std::move(requests_.front());
      requests_.pop_front();
      try {  // a thread the system will not make (EAGAIN) is the caller's error, not this loop's
        r.made.set_value(std::thread(std::move(r.fn)));
      } catch (...) { r.made.set_exception(std::current_exception()); }
    }
  });
}

ThreadSpawner::~ThreadSpawner() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

std::thread ThreadSpawner::spawn(std::function<void()> fn) {
  std::future<std::thread> made;
  {
    std::lock_guard lock(mu_);
    requests_.push_back({std::move(fn), {}});
    made = requests_.back().made.get_future();
    cv_.notify_all();
  }
  return made.get();
}

Universe::Universe(const ThreadsOptions& opt)
    : size_(opt.world_size),
      trace_(opt.trace),
      gate_(opt.gate),
      faults_(opt.faults),
      link_(opt.gate ? LinkSpec{} : opt.link),
      nodes_(opt.gate ? NodeLayout{} : opt.nodes),
      link_timer_(spawner_) {
  for (int i = 0; i < size_; ++i) ranks_.push_back(std::make_unique<RankState>());
  for (int tier = 0; tier < 2; ++tier) {
    send_free_[tier].resize(std::size_t(size_));
    recv_free_[tier].resize(std::size_t(size_));
  }
}

std::chrono::steady_clock::time_point Universe::schedule_transfer(int src, int dst, std::size_t bytes, int channel) {
  using namespace std::chrono;
  const LinkSpec& link = link_between(link_, nodes_, src, dst);
  const int tier = &link == &link_ ? 0 : 1;
  const auto alpha = duration_cast<steady_clock::duration>(duration<double>(link.alpha_s()));
  const auto on_wire = duration_cast<steady_clock::duration>(duration<double>(double(bytes) / link.beta_Bps()));
  std::lock_guard lock(link_mu_);
  auto& send_free = send_free_[tier][std::size_t(src)];
  auto& recv_free = recv_free_[tier][std::size_t(dst)];
  auto& channel_send_free = channel_send_free_[{tier, src, channel}];
  auto& channel_recv_free = channel_recv_free_[{tier, dst, channel}];
  // The channel's connection takes the message once it is free; its latency passes; then
  // its bytes take both ranks' directions, after whatever other channel's bytes hold them.
  const auto start = std::max({steady_clock::now(), channel_send_free, channel_recv_free});
  const auto end = std::max({start + alpha, send_free, recv_free}) + on_wire;
  send_free = recv_free = channel_send_free = channel_recv_free = end;
  return end;
}

LinkTimer::~LinkTimer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void LinkTimer::at(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  if (!thread_.joinable()) thread_ = spawner_.spawn([this] { loop(); });
  due_.emplace(when, std::move(fn));
  cv_.notify_all();
}

void LinkTimer::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (due_.empty()) {
      if (stop_) return;
      cv_.wait(lock);
      continue;
    }
    const auto when = due_.begin()->first;
    if (std::chrono::steady_clock::now() < when && !stop_) {  // at stop, finish what is due at once
      cv_.wait_until(lock, when);
      continue;
    }
    auto fn = std::move(due_.begin()->second);
    due_.erase(due_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
}

void Universe::abort(int failed_rank, const std::string& why) {
  {
    std::lock_guard lock(abort_mu_);
    if (aborted_.load()) return;
    failed_rank_ = failed_rank;
    abort_reason_ = why;
    aborted_.store(true, std::memory_order_release);
  }
  if (gate_) gate_->abort();
  for (auto& r : ranks_) {
    std::lock_guard lock(r->mu);
    r->cv.notify_all();
  }
}

int Universe::failed_rank() const {
  std::lock_guard lock(abort_mu_);
  return failed_rank_;
}

std::string Universe::abort_reason() const {
  std::lock_guard lock(abort_mu_);
  return abort_reason_;
}

void Universe::throw_aborted(int me) const {
  const int failed = failed_rank();
  std::string who = failed >= 0 ? "rank " + std::to_string(failed) + " failed" : "the watchdog stopped the run";
  throw Aborted(failed, "rank " + std::to_string(me) + " stopped because " + who + ": " + abort_reason());
}

void Universe::wait_until(int g, Waiter role, const std::function<bool()>& done, const std::string& what) {
  if (done()) return;
  RankState& rs = rank_state(g);
  std::unique_lock lock(rs.mu);
  rs.blocked_on[int(role)] = what;
  const bool comm_stream = role == Waiter::comm;  // a stepped world counts both sides asleep
  while (!done()) {
    if (aborted()) {
      rs.blocked_on[int(role)].clear();
      if (gate_) gate_->unblock(g, comm_stream);
      lock.unlock();
      throw_aborted(g);
    }
    if (gate_) gate_->block(g, comm_stream);
    rs.cv.wait_for(lock, kAbortPoll);
  }
  rs.blocked_on[int(role)].clear();
  if (gate_) gate_->unblock(g, comm_stream);
}

void Universe::sleep_until(int g, std::chrono::steady_clock::time_point when) {
  for (auto now = std::chrono::steady_clock::now(); now < when; now = std::chrono::steady_clock::now()) {
    if (aborted()) throw_aborted(g);
    std::this_thread::sleep_until(std::min(when, now + kAbortPoll));
  }
}

void Universe::wake(int g) {
  RankState& rs = rank_state(g);
  if (gate_) gate_->unblock(g);  // before the waiter runs, so the gate never sees a false quiet
  std::lock_guard lock(rs.mu);
  rs.cv.notify_all();
}

std::string Universe::describe_blocked() {
  std::string out;
  for (int g = 0; g < size_; ++g) {
    RankState& rs = rank_state(g);
    std::lock_guard lock(rs.mu);
    std::string line = "rank " + std::to_string(g) + " ";
    if (rs.finished) {
      line += "finished";
    } else if (!rs.blocked_on[0].empty()) {
      line += "waits " + rs.blocked_on[0];
      if (!rs.blocked_on[1].empty()) line += " (its comm stream waits " + rs.blocked_on[1] + ")";
    } else if (!rs.blocked_on[1].empty()) {
      line += "runs; its comm stream waits " + rs.blocked_on[1];
    } else {
      line += "is running (computing, not waiting on communication)";
    }
    out += (out.empty() ? "" : "\n  ") + line;
  }
  return out;
}

bool Universe::any_rank_computing() {
  for (int g = 0; g < size_; ++g) {
    RankState& rs = rank_state(g);
    std::lock_guard lock(rs.mu);
    if (!rs.finished && rs.blocked_on[0].empty()) return true;
  }
  return false;
}

void WorkQueue::push(std::function<void()> task) {
  const RunClock::time_point posted_at = RunClock::now();  // on the posting thread
  std::lock_guard lock(mu);
  tasks.push_back({std::move(task), posted_at});
  cv.notify_one();
}

std::shared_ptr<WorkQueue> Universe::start_worker() {
  auto q = std::make_shared<WorkQueue>();
  std::thread t;
  try {
    t = spawner_.spawn(worker_loop(q));
  } catch (const std::system_error& e) {
    throw UsageError(std::string("could not start a comm stream thread (") + e.what() +
                     "): the process has no room for more threads (each rank has one per group it talks in); run "
                     "fewer --ranks, or raise the limits (ulimit -v, ulimit -u)");
  }
  std::lock_guard lock(workers_mu_);
  workers_.emplace_back(q, std::move(t));
  return q;
}

std::function<void()> Universe::worker_loop(std::shared_ptr<WorkQueue> q) const {
  return [q, gate = gate_] {
    const RunClock::Install clock(gate);                         // a stepped run: this stream keeps its own run time
    RunClock::time_point free_at = RunClock::time_point::min();  // when its last task ended, in run time
    for (;;) {
      WorkQueue::Task task;
      {
        std::unique_lock lock(q->mu);
        q->cv.wait(lock, [&] { return q->stop || !q->tasks.empty(); });
        if (q->tasks.empty()) return;  // stopped and drained
        task = std::move(q->tasks.front());
        q->tasks.pop_front();
        q->busy = true;
      }
      // In a free run the stream starts a task when it is free and the task was posted.
      RunClock::resume_at(std::max(free_at, task.posted_at));
      task.run();  // tasks catch their own errors
      free_at = RunClock::now();
      std::lock_guard lock(q->mu);
      q->busy = false;
    }
  };
}

void Universe::stop_workers() {
  std::lock_guard lock(workers_mu_);
  for (auto& [q, t] : workers_) {
    std::lock_guard qlock(q->mu);
    q->stop = true;
    q->cv.notify_all();
  }
}

bool Universe::workers_idle() {
  std::lock_guard lock(workers_mu_);
  for (auto& [q, t] : workers_) {
    std::lock_guard qlock(q->mu);
    if (q->busy || !q->tasks.empty()) return false;
  }
  return true;
}

void Universe::join_workers() {
  stop_workers();
  std::lock_guard lock(workers_mu_);
  for (auto& [q, t] : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

void GroupBarrier::arrive_and_wait(Universe& u, const std::vector<int>& members, int g, Waiter role,
                                   const std::string& what) {
  std::uint64_t my_generation = 0;
  bool last = false;
  {
    // After an abort nobody passes, and the last arrival checks too: a member that left an
    // earlier barrier by the abort must never complete a later one for the others, who
    // would then read its published buffers (a comm worker running the next queued
    // collective of a failed rank's group did: a null slot, SIGSEGV).
    std::lock_guard lock(mu_);
    if (u.aborted()) u.throw_aborted(g);
    my_generation = generation_;
    latest_arrival_ = arrived_ == 0 ? RunClock::now() : std::max(latest_arrival_, RunClock::now());
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      released_at_ = latest_arrival_;
      last = true;
    }
  }
  if (last) {  // everyone has arrived: wake the members sleeping on their own rank's condvar
    u.note_progress();
    for (int m : members) u.wake(m);
    // The last to arrive in real time need not be the latest in run time (a stepped run's
    // threads keep their own): it too goes on from the latest arrival.
    RunClock::time_point at = RunClock::now();
    {
      std::lock_guard lock(mu_);
      at = std::max(at, released_at_);  // (never back: if it was the latest, its own clock stands)
    }
    RunClock::resume_at(at);
    return;
  }
  try {
    u.wait_until(
        g, role,
        [&] {
          std::lock_guard lock(mu_);
          return generation_ != my_generation;
        },
        what);
  } catch (...) {  // left by the abort: take the arrival back, so no later barrier counts it
    std::lock_guard lock(mu_);
    if (generation_ == my_generation) --arrived_;
    throw;
  }
  // The next generation cannot complete without this member, so released_at_ is still ours.
  std::lock_guard lock(mu_);
  RunClock::resume_at(released_at_);
}

}  // namespace dtl::threads
