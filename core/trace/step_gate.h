// StepGate: lets a learner advance a live run one transfer at a time.
//
// In stepping mode a matched point-to-point transfer does not move at once: it is handed
// to the gate and the posting call returns, so every rank runs on until it must wait for
// data. When the whole world is quiet (every rank waits on a request or has finished),
// the set of transfers ready to move depends only on the program, not on thread timing.
// The controller then moves the one with the smallest key (sender, then receiver) on
// its own thread. So the order of transfers — and every picture drawn from it — is the
// same on every run. The terminal step-through (`dtlab run ... --step`) and the
// visualizer are both controllers of this one gate.
//
// Labs built on library collectives (DDP) step by collective instead (StepUnit::collectives):
// the members of a group meet at the collective's launch and wait there, blocked, until
// the controller releases it; then all launch it and go on computing while it runs on
// their comm streams, so a stepped run overlaps communication with backward exactly as a
// free one does. Point-to-point transfers then move at once. (So a launch blocks until
// the whole group has reached it: a program whose peer needs a message this rank posts
// only after an async collective would wait here; no current lab does.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/trace/vocab.h"

namespace dtl {

class StepGate {
 public:
  // `unit`: what one release lets move.
  explicit StepGate(int world_size, StepUnit unit = StepUnit::transfers);
  StepUnit unit() const { return unit_; }

  // ---- rank side (called by the threads backend) ----
  // Queues a matched transfer (or a collective all members have reached). Returns false
  // when the gate is running freely: the caller then moves the data itself, at once.
  bool submit(std::uint64_t key, std::function<void()> transfer);
  // The rank's thread (or, comm_stream, its comm stream) is about to sleep on something not
  // done; unblock: it can run again (called by whoever completed it; both sides when the
  // caller does not know which one waits: a sleeper that is still not done blocks again).
  void block(int rank, bool comm_stream = false);
  void unblock(int rank);
  void unblock(int rank, bool comm_stream);
  void finish(int rank);  // the rank's body returned (or threw)
  // Work queued on a rank's comm stream (a library collective): while it runs and is not
  // blocked, the world is not quiet, though every rank thread may sleep (DDP's next bucket
  // waits at the gate meanwhile), so its time is never counted as the learner's.
  void work_begin(int rank);
  void work_end(int rank);

  // ---- controller side ----
  enum class State { transfer_waiting, all_finished, aborted };
  // Waits until the world is quiet, then says whether a transfer waits for release.
  State wait_quiet();
  // Non-blocking form for a frame loop: the state if the world is quiet now, else `running`.
  enum class Poll { running, transfer_waiting, all_finished, aborted };
  Poll poll() const;
  void release_one();               // moves the smallest waiting transfer, on the calling thread
  void release_all();               // stop gating: move what waits and let the run go at full speed
  void abort();                     // drop what waits; wait_quiet returns `aborted` from now on
  bool controller_waiting() const;  // ranks wait on the controller (the watchdog pauses)
  // The times the whole world sat waiting for the controller (quiet, a step ready, not yet
  // released): a person's thinking time, which a timeline of the run cuts out.
  using TimePoint = std::chrono::steady_clock::time_point;
  std::vector<std::pair<TimePoint, TimePoint>> controller_waits() const;
  std::size_t controller_wait_count() const;  // cheap: whether there are new ones
  // Their total so far, the open one up to now: how long the learner thought (tests read it;
  // the run's clocks leave out more than this, each thread its own waits: core/trace/run_clock.h).
  std::chrono::nanoseconds paused() const;

 private:
  bool quiet_locked() const;
  void note_waiting_locked();  // the world may just have started waiting for the controller
  void end_waiting_locked();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<char> blocked_;       // per rank: asleep on a request not yet done
  std::vector<char> comm_blocked_;  // per rank: its comm stream asleep (on the rest of its group)
  std::vector<int> comm_work_;      // per rank: collectives queued on its comm stream, not done
  std::vector<char> finished_;
  std::multimap<std::uint64_t, std::function<void()>> ready_;  // by key: smallest first
  bool free_running_ = false;
  bool aborted_ = false;
  StepUnit unit_;
  std::optional<TimePoint> waiting_since_;
  std::vector<std::pair<TimePoint, TimePoint>> waits_;
  std::chrono::nanoseconds waited_{0};  // the closed waits' total
};

}  // namespace dtl
