// StepGate: lets a learner advance a live run one transfer at a time.
//
// In stepping mode every point-to-point transfer stops at the gate just before its data
// moves. The gate releases one transfer per step, and only when the whole world is
// quiet (every rank is either waiting at the gate, blocked on a request, or finished).
// Among the waiting transfers it releases the one with the smallest key (sender, then
// receiver), so the order of transfers — and every picture drawn from it — is the same
// on every run. The terminal step-through (`dtlab run ... --step`) and the visualizer
// are both controllers of this one gate.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dtl {

class StepGate {
 public:
  explicit StepGate(int world_size);

  // ---- rank side (called by the threads backend) ----
  // Blocks until this transfer is released. Returns false if the gate was aborted.
  bool pass(int rank, std::uint64_t key);
  void block(int rank);    // the rank is about to sleep on a request that is not done
  void unblock(int rank);  // the rank can run again (called by whoever completed its request)
  void finish(int rank);   // the rank's body returned (or threw)

  // ---- controller side ----
  enum class State { transfer_waiting, all_finished, aborted };
  // Waits until the world is quiet, then says whether a transfer waits for release.
  State wait_quiet();
  void release_one();   // let the smallest waiting transfer go
  void release_all();   // stop gating: the run continues at full speed
  void abort();         // wake everyone; pass() returns false from now on
  bool controller_waiting() const;  // true while ranks wait on the controller (the watchdog pauses)

 private:
  bool quiet_locked() const;
  int world_size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<char> blocked_;   // per rank: asleep on a request, at the gate, or finished
  std::vector<char> finished_;
  std::vector<std::uint64_t> pending_key_;  // per rank: key of the transfer it waits to make
  std::vector<char> pending_;
  int credits_ = 0;
  bool free_running_ = false;
  bool aborted_ = false;
};

}  // namespace dtl
