#include "core/trace/step_gate.h"

#include <algorithm>
#include <chrono>

namespace dtl {

StepGate::StepGate(int n)
    : world_size_(n), blocked_(std::size_t(n), 0), finished_(std::size_t(n), 0),
      pending_key_(std::size_t(n), 0), pending_(std::size_t(n), 0) {}

bool StepGate::quiet_locked() const {
  return std::all_of(blocked_.begin(), blocked_.end(), [](char b) { return b != 0; });
}

bool StepGate::pass(int rank, std::uint64_t key) {
  std::unique_lock lock(mu_);
  if (free_running_) return !aborted_;
  const auto r = std::size_t(rank);
  pending_[r] = 1;
  pending_key_[r] = key;
  blocked_[r] = 1;
  cv_.notify_all();  // the controller may be waiting for quiet
  // Released when: a credit is available, the world is quiet, and we hold the smallest key.
  auto my_turn = [&] {
    if (aborted_ || free_running_) return true;
    if (credits_ == 0 || !quiet_locked()) return false;
    for (int q = 0; q < world_size_; ++q)
      if (pending_[std::size_t(q)] && pending_key_[std::size_t(q)] < key) return false;
    return true;
  };
  cv_.wait(lock, my_turn);
  pending_[r] = 0;
  blocked_[r] = 0;
  if (!free_running_ && !aborted_) --credits_;
  return !aborted_;
}

void StepGate::block(int rank) {
  std::lock_guard lock(mu_);
  blocked_[std::size_t(rank)] = 1;
  cv_.notify_all();
}

void StepGate::unblock(int rank) {
  std::lock_guard lock(mu_);
  if (!finished_[std::size_t(rank)]) blocked_[std::size_t(rank)] = 0;
}

void StepGate::finish(int rank) {
  std::lock_guard lock(mu_);
  finished_[std::size_t(rank)] = 1;
  blocked_[std::size_t(rank)] = 1;
  cv_.notify_all();
}

StepGate::State StepGate::wait_quiet() {
  std::unique_lock lock(mu_);
  // A rank blocked on a request counts as quiet only while nothing it waits on can
  // complete; that holds because transfers move only through pass().
  // Ranks blocked with no transfer pending may be inside a library collective: keep waiting
  // (a real deadlock is the watchdog's to report).
  auto any_pending = [&] { return std::any_of(pending_.begin(), pending_.end(), [](char p) { return p != 0; }); };
  auto all_finished = [&] { return std::all_of(finished_.begin(), finished_.end(), [](char f) { return f != 0; }); };
  cv_.wait(lock, [&] {
    return aborted_ || (credits_ == 0 && quiet_locked() && (any_pending() || all_finished()));
  });
  if (aborted_) return State::aborted;
  return any_pending() ? State::transfer_waiting : State::all_finished;
}

void StepGate::release_one() {
  std::lock_guard lock(mu_);
  ++credits_;
  cv_.notify_all();
}

void StepGate::release_all() {
  std::lock_guard lock(mu_);
  free_running_ = true;
  cv_.notify_all();
}

void StepGate::abort() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

bool StepGate::controller_waiting() const {
  std::lock_guard lock(mu_);
  return !free_running_ && credits_ == 0 && quiet_locked() &&
         std::any_of(pending_.begin(), pending_.end(), [](char p) { return p != 0; });
}

}  // namespace dtl
