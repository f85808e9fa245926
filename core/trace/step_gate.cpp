#include "core/trace/step_gate.h"

#include <algorithm>

namespace dtl {

StepGate::StepGate(int n, StepUnit unit)
    : blocked_(std::size_t(n), 0),
      comm_blocked_(std::size_t(n), 0),
      comm_work_(std::size_t(n), 0),
      finished_(std::size_t(n), 0),
      unit_(unit) {}

bool StepGate::quiet_locked() const {
  for (std::size_t r = 0; r < blocked_.size(); ++r) {
    if (!blocked_[r] && !finished_[r]) return false;
    if (comm_work_[r] > 0 && !comm_blocked_[r]) return false;  // its comm stream still works
  }
  return true;
}

void StepGate::note_waiting_locked() {
  if (!waiting_since_ && !ready_.empty() && quiet_locked()) waiting_since_ = std::chrono::steady_clock::now();
}

void StepGate::end_waiting_locked() {
  if (waiting_since_) {
    waits_.push_back({*waiting_since_, std::chrono::steady_clock::now()});
    waited_ += std::chrono::duration_cast<std::chrono::nanoseconds>(waits_.back().second - waits_.back().first);
  }
  waiting_since_.reset();
}

std::chrono::nanoseconds StepGate::paused() const {
  std::lock_guard lock(mu_);
  if (!waiting_since_) return waited_;
  return waited_ +
         std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - *waiting_since_);
}

void StepGate::work_begin(int rank) {
  std::lock_guard lock(mu_);
  ++comm_work_[std::size_t(rank)];
}

void StepGate::work_end(int rank) {
  std::lock_guard lock(mu_);
  --comm_work_[std::size_t(rank)];
  note_waiting_locked();
  cv_.notify_all();
}

bool StepGate::submit(std::uint64_t key, std::function<void()> transfer) {
  std::lock_guard lock(mu_);
  if (free_running_ || aborted_) return false;
  ready_.emplace(key, std::move(transfer));
  note_waiting_locked();
  cv_.notify_all();
  return true;
}

void StepGate::block(int rank, bool comm_stream) {
  std::lock_guard lock(mu_);
  (comm_stream ? comm_blocked_ : blocked_)[std::size_t(rank)] = 1;
  note_waiting_locked();
  cv_.notify_all();
}

void StepGate::unblock(int rank) {
  std::lock_guard lock(mu_);
  blocked_[std::size_t(rank)] = 0;
  comm_blocked_[std::size_t(rank)] = 0;
}

void StepGate::unblock(int rank, bool comm_stream) {
  std::lock_guard lock(mu_);
  (comm_stream ? comm_blocked_ : blocked_)[std::size_t(rank)] = 0;
}

void StepGate::finish(int rank) {
  std::lock_guard lock(mu_);
  finished_[std::size_t(rank)] = 1;
  note_waiting_locked();
  cv_.notify_all();
}

StepGate::State StepGate::wait_quiet() {
  std::unique_lock lock(mu_);
  // Quiet with nothing ready but ranks still blocked: they may be inside a library
  // collective, so keep waiting (a real deadlock is the watchdog's to report).
  auto all_finished = [&] { return std::all_of(finished_.begin(), finished_.end(), [](char f) { return f != 0; }); };
  cv_.wait(lock, [&] { return aborted_ || (quiet_locked() && (!ready_.empty() || all_finished())); });
  if (aborted_) return State::aborted;
  return ready_.empty() ? State::all_finished : State::transfer_waiting;
}

StepGate::Poll StepGate::poll() const {
  std::lock_guard lock(mu_);
  if (aborted_) return Poll::aborted;
  if (!quiet_locked()) return Poll::running;
  if (!ready_.empty()) return Poll::transfer_waiting;
  const bool all_finished = std::all_of(finished_.begin(), finished_.end(), [](char f) { return f != 0; });
  return all_finished ? Poll::all_finished : Poll::running;
}

void StepGate::release_one() {
  std::function<void()> transfer;
  {
    std::lock_guard lock(mu_);
    if (ready_.empty() || aborted_) return;
    end_waiting_locked();
    transfer = std::move(ready_.begin()->second);
    ready_.erase(ready_.begin());
  }
  transfer();  // completes requests, which unblock their owners before we look again
}

void StepGate::release_all() {
  std::multimap<std::uint64_t, std::function<void()>> waiting;
  {
    std::lock_guard lock(mu_);
    free_running_ = true;
    end_waiting_locked();
    waiting.swap(ready_);
  }
  for (auto& [key, transfer] : waiting) transfer();
}

void StepGate::abort() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  ready_.clear();
  cv_.notify_all();
}

std::vector<std::pair<StepGate::TimePoint, StepGate::TimePoint>> StepGate::controller_waits() const {
  std::lock_guard lock(mu_);
  return waits_;
}

std::size_t StepGate::controller_wait_count() const {
  std::lock_guard lock(mu_);
  return waits_.size();
}

bool StepGate::controller_waiting() const {
  std::lock_guard lock(mu_);
  return !free_running_ && !aborted_ && !ready_.empty() && quiet_locked();
}

}  // namespace dtl
