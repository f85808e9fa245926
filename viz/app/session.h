// Session: where the views' data comes from. Either a trace file (replay) or a lab that
// runs live in this process on the threads backend, advanced through the step gate. The
// views read the session's event store every frame and keep no copy of lab state.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/trace/chunk_state.h"
#include "core/trace/step_gate.h"
#include "core/trace/trace.h"
#include "labs/lab.h"
#include "viz/model/trace_index.h"

namespace dtl::viz {

class Session {
 public:
  static std::unique_ptr<Session> replay(const std::string& path) { return replay(std::vector<std::string>{path}); }
  // Several files or a folder: the per-rank torch.profiler traces of one run (torch_trace.h).
  static std::unique_ptr<Session> replay(const std::vector<std::string>& paths);
  static std::unique_ptr<Session> live(const LabInfo& lab, LabConfig cfg);
  ~Session();

  bool live() const { return gate_ != nullptr; }
  const TraceData& data() const { return data_; }
  const TraceIndex& index() const { return index_; }
  // What the learner steps through (the cursor counts these): transfers, or collectives.
  const std::vector<Event>& steps() const { return index_.steps(); }
  StepUnit unit() const { return index_.unit; }
  const char* step_name() const { return step_unit_noun(unit()); }
  // The lab's views (LabInfo::views); a trace of a lab this build lacks gets the ring when it
  // holds transfers, and the timeline, memory and report.
  std::vector<ViewKind> views() const;
  const LabInfo* lab() const { return lab_; }                               // replay: the lab the trace names, if known
  const std::vector<Event>& transfers() const { return index_.transfers; }  // receives, in landing order
  const std::vector<Track>& tracks() const { return index_.tracks; }
  const ChunkTimeline& chunk_timeline() const { return index_.chunk_timeline; }
  const BusyIndex& busy() const { return index_.busy; }
  const std::vector<Edge>& edges() const { return index_.edges; }
  int chunks() const { return chunk_grid(data_); }

  void refresh();            // live: take what was recorded since the last frame
  bool can_advance() const;  // live: a step (transfer or collective) waits at the gate
  void advance_one();        // live: let the next one move
  bool finished() const;
  std::string status() const;  // one line for the controls bar
  const LabConfig& config() const { return cfg_; }
  std::string lab_name() const { return lab_ ? lab_->name : data_.meta.count("lab") ? data_.meta.at("lab") : "trace"; }

 private:
  Session() = default;
  TraceData data_;
  TraceIndex index_;  // derived from data_
  std::size_t seen_events_ = 0;
  LandingOrder landed_;  // a live run's transfers in the order they landed (derived from its events)

  const LabInfo* lab_ = nullptr;  // live: the lab running; replay: the lab the trace names
  StepUnit unit_ = StepUnit::transfers;

  // live only
  LabConfig cfg_;
  std::unique_ptr<Trace> trace_;
  std::unique_ptr<StepGate> gate_;
  std::thread runner_;
  std::string error_;
  bool done_ = false;
  std::string report_json_;
  std::mutex mu_;  // guards error_, done_, report_json_ (written by the runner thread)
};

}  // namespace dtl::viz
