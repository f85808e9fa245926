// The trace of one run: every rank's events, the label table and run metadata.
//
// Each (rank, stream) owns an EventLog with exactly one writer thread, so appending is
// a plain store plus one release increment: no lock on the hot path. Readers (the
// writer at the end, the step printer, the live visualizer) may read concurrently up
// to the published size. Blocks are never moved, so a reader never sees a torn event.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/event.h"
#include "core/trace/vocab.h"

namespace dtl {

class StepGate;

class EventLog {
 public:
  EventLog();
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  void append(const Event& e);  // single writer
  std::size_t size() const { return count_.load(std::memory_order_acquire); }
  const Event& operator[](std::size_t i) const {
    return blocks_[i / kBlock].load(std::memory_order_relaxed)[i % kBlock];
  }

 private:
  static constexpr std::size_t kBlock = 4096;
  static constexpr std::size_t kMaxBlocks = 1 << 15;  // 134M events per track
  std::unique_ptr<std::atomic<Event*>[]> blocks_;
  std::atomic<std::size_t> count_{0};
};

class Trace {
 public:
  static constexpr int kStreams = 2;
  explicit Trace(int world_size);

  int world_size() const { return world_size_; }
  EventLog& log(int rank, int stream) { return *logs_[std::size_t(rank) * kStreams + std::size_t(stream)]; }
  const EventLog& log(int rank, int stream) const { return *logs_[std::size_t(rank) * kStreams + std::size_t(stream)]; }

  // Nanoseconds since this trace was created (steady clock), less the learner's pauses of a
  // stepped run (leave_out_pauses): the clock RunClock keeps for the labs.
  std::int64_t now_ns() const {
    const std::int64_t t =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count();
    return pauses_ ? t - paused_ns() : t;
  }
  // A stepped run: its events leave out the time `gate` kept the world waiting for the learner.
  void leave_out_pauses(const StepGate* gate) { pauses_ = gate; }

  // The epoch on the steady clock, in ns. Processes on one host share that clock, so
  // the difference of two epochs aligns their traces exactly.
  std::int64_t epoch_steady_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(epoch_.time_since_epoch()).count();
  }

  // Interned labels: words for people ("ring all-reduce", "fwd block 3") with the typed
  // Role programs read (core/trace/vocab.h); one id per distinct (name, role). Thread-safe;
  // call it once per label and keep the id, not on every event.
  std::uint16_t label(std::string_view name, const Role& role = {});
  std::string label_name(std::uint16_t id) const;
  Role label_role(std::uint16_t id) const;  // an empty Role for an unknown id
  std::vector<std::string> labels() const;
  std::vector<Role> roles() const;  // parallel to labels()

  std::uint64_t next_flow_id() { return next_flow_.fetch_add(1, std::memory_order_relaxed); }

  // Free-form run metadata written into the trace ("lab", "algo", "chunks", ...).
  void set_meta(const std::string& key, const std::string& value);
  void set_meta(MetaKey key, const std::string& value) { set_meta(meta_key_name(key), value); }
  std::map<std::string, std::string> meta() const;

  // Every event recorded so far, sorted by (begin, rank). For writers and reports.
  std::vector<Event> snapshot() const;

  // Convenience for labs and reports: append to the given track.
  void record(const Event& e) { log(e.rank, e.stream).append(e); }

 private:
  int world_size_;
  std::chrono::steady_clock::time_point epoch_;
  const StepGate* pauses_ = nullptr;  // a stepped run's gate (leave_out_pauses)
  std::int64_t paused_ns() const;
  std::vector<std::unique_ptr<EventLog>> logs_;
  mutable std::mutex mu_;  // guards labels_ and meta_ (cold path)
  std::vector<std::string> labels_;
  std::vector<Role> roles_;                                                               // parallel to labels_
  std::map<std::string, std::map<std::uint64_t, std::uint16_t>, std::less<>> label_ids_;  // name → role_code → id
  std::map<std::string, std::string> meta_;
  std::atomic<std::uint64_t> next_flow_{1};
};

// The phase span in which a lab runs its single-rank reference (the check that N ranks
// equal one): the visualizer hides it unless asked (it would fill the timeline); it finds
// it by its role (RunPart::reference), these words are what a learner reads.
inline constexpr const char* kReferencePhaseLabel = "1-rank reference";
inline constexpr Role kReferenceRole{.part = RunPart::reference};

// RAII span on a rank's main stream: records a `phase` (or `compute`) event on destruction.
// A phase also records where it begins, at once: an instant (EventKind::mark) with the
// phase's label and begin time, so a live view knows the phase in progress before its span
// exists (the memory of the ZeRO stage being stepped, the collectives run being stepped).
class ScopedSpan {
 public:
  ScopedSpan(Trace* trace, int rank, EventKind kind, std::uint16_t label, int step = -1);
  ~ScopedSpan();
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  Trace* trace_;
  Event ev_;
};

}  // namespace dtl
