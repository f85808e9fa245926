// The one way a run starts, for `dtlab run`, `dtlab-viz --lab` and the tests: a lab and
// what its user asked for become the run — its configuration (the lab's defaults filled in
// and validated), the metadata its trace starts with, what one step moves, and how its
// thread ranks run. Written once, so the terminal and the viewer cannot disagree about a run.
//
//   RunRequest request;                       // from the command line
//   request.cfg.ranks = 4;
//   request.cfg.options = LabOptions({{"algo", "ring"}});
//   request.mode = RunMode::live;
//   const Launch run = launch(lab, request);  // UsageError for a configuration that cannot run
//   Trace trace(run.cfg.ranks);
//   run.start_trace(trace);
//   ThreadsOptions opt = run.threads;
//   opt.trace = &trace;                       // the trace and the gate are the caller's
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/comm/threads_backend.h"
#include "core/trace/step_gate.h"
#include "core/trace/trace.h"
#include "labs/lab.h"

namespace dtl {

// How the run is watched.
enum class RunMode {
  free,     // `dtlab run`, the tests: warm-up and timed repetitions as asked
  stepped,  // `dtlab run --step`: one traced pass, each step released by the learner, from the
            // lab's live_options where the user gave none (a size one can step through)
  live,     // `dtlab-viz --lab`: stepped, from the lab's live_options where the user gave none,
            // and the lab's own rules checked before the window opens (exit 2, not an empty window)
};

// What the user asked for, parsed by the caller's command line.
struct RunRequest {
  LabConfig cfg;  // its options as typed, not yet validated (launch fills the defaults)
  RunMode mode = RunMode::free;
  FaultPlan faults;       // --inject-fault, --inject-hang (what they count is the lab's: LabInfo::step_unit)
  double timeout_s = 60;  // the watchdog: no rank making progress this long aborts the run
};

// The run, ready to start.
struct Launch {
  LabConfig cfg;                            // validated, with the lab's defaults
  std::map<std::string, std::string> meta;  // the trace's metadata before the first event
  StepUnit unit = StepUnit::transfers;      // what one step of a stepped run moves
  int chunks = 0;                           // the chunk picture's grid (0: the lab draws none)
  ThreadsOptions threads;                   // world, faults, watchdog, link, priorities; no trace, no gate

  void start_trace(Trace& trace) const;  // writes `meta` into it
};

// The run `request` asks of `lab`; UsageError naming the option for one that cannot run.
Launch launch(const LabInfo& lab, RunRequest request);

// What one step moves in a run of `lab` (nullptr: a trace of a lab this build lacks): its
// library collectives for labs built on them (DDP), else each point-to-point transfer.
StepUnit step_unit(const LabInfo* lab);

}  // namespace dtl
