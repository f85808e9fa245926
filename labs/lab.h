// What a lab is: a function run on every rank against dtl::Comm, returning a Report, plus
// a registry entry (name, description, the options it reads, its exercises). Adding a lab
// is its folder (labs/<lab>/: the lab, its LabInfo, its report) and one line in
// labs/registry.cpp; the CLI, `dtlab grade`, the visualizer and the tests find it there.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/link.h"
#include "core/comm/threads_backend.h"
#include "core/memory/memory.h"
#include "exercises/track/hints.h"
#include "labs/options.h"
#include "labs/report.h"
#include "labs/view_kind.h"

namespace dtl {

// Options of `dtlab run` that only some labs read; a lab lists the ones it uses, and the
// others are usage errors for it. (--ranks, --backend, --trace, --json, --timeout and the
// --link options apply to every lab.)
enum class RunOption {
  bytes,      // --bytes: buffer size per rank
  dtype,      // --dtype: element type
  iters,      // --iters, --warmup: timed and untimed repetitions
  device,     // --device: buffers on the host or on GPUs
  step,       // --step: terminal step-through (one transfer, or one collective)
  faults,     // --inject-fault, --inject-hang
  slow_rank,  // --slow-rank: a straggler
  repeat,     // --repeat: timed runs; a timing is their median, with min–max
};

struct LabConfig {
  int ranks = 4;
  std::uint64_t bytes = 1 << 20;
  DType dtype = DType::f32;
  std::string backend = "threads";
  // Where the lab's buffers live: cpu, or cuda (rank r on GPU r mod count, see rank_device).
  Device::Kind device = Device::Kind::cpu;
  int iters = 5;     // timed repetitions
  int warmup = 1;    // untimed repetitions first
  int repeat = 5;    // timed runs (labs declaring RunOption::repeat): timings are their median, min–max
  LinkSpec link;     // the emulated interconnect the run uses (threads backend), for predicted times
  NodeLayout nodes;  // --topology: ranks in nodes; `link` within a node, nodes.inter between them
  // --slow-rank R:FACTOR: rank R's compute spans last FACTOR times as long (a straggler).
  int slow_rank = -1;
  double slow_factor = 1.0;
  LabOptions options;  // the lab's own, validated by with_defaults
  // --step, --inject-fault/--inject-hang given: they count the lab's transfers (or collectives,
  // LabInfo::step_unit), so a configuration that makes none refuses them.
  bool counts_steps = false;
  // Where a lab says how far it has come ("bucketed: step 7 of 26"), from global rank 0;
  // empty: nowhere. `dtlab run` prints it on stderr once a run has taken a few seconds.
  std::function<void(const std::string&)> progress;

  nlohmann::json to_json() const;
};

// Tells cfg.progress how far the lab has come (global rank 0 only; a no-op without a sink).
void report_progress(const Comm& comm, const LabConfig& cfg, const std::string& line);
// A report for this run: lab, backend, ranks, the config as JSON, and the header's
// first words (the emulated link, if any); the lab adds its own setup words.
Report start_report(const Comm& comm, const LabConfig& cfg, const std::string& lab);

// An exercise a lab calls (exercises/<lab>.h), graded by a GoogleTest suite of its
// tests/grade/<lab>/grade_test*.cpp.
struct ExerciseInfo {
  std::string id;     // the function's name, as `dtlab grade --exercise ID` takes it
  std::string suite;  // the GoogleTest suite that grades it
  int points = 0;
};

struct LabInfo {
  std::string name;
  std::string description;
  std::vector<RunOption> run_options;   // which of the optional run-wide options it reads
  std::vector<OptionSpec> options;      // its own options
  std::vector<ExerciseInfo> exercises;  // in the order a learner meets them
  std::function<Report(Comm&, const LabConfig&)> run;
  // Chunk grid the step-through draws (0: no chunk picture).
  std::function<int(const LabConfig&)> chunk_grid;
  // What --inject-fault/--inject-hang RANK:STEP count: the rank's sends (labs built from
  // point-to-point messages), or its library collectives (DDP: its all-reduces). It is
  // also what one step of a stepped run moves (`dtlab run --step`, dtlab-viz's StepGate).
  StepUnit step_unit = StepUnit::transfers;
  // The lab computes while collectives run (DDP's backward): on thread ranks its rank
  // threads get a lower priority than their comm streams (ThreadsOptions::compute_nice).
  bool overlaps_compute = false;
  // Its views in dtlab-viz, the main one first (labs/view_kind.h).
  std::vector<ViewKind> views = {ViewKind::timeline, ViewKind::memory, ViewKind::report};
  // Option values a live, stepped run in dtlab-viz starts from where the command line
  // gives none, so the run's structure shows at a size one can step through (DDP: buckets
  // small enough that the default model has several; the pipeline's --compute-us, so its text
  // Gantt shows the schedule, not timer noise). `dtlab run --step` starts from them too (it
  // says which); a free `dtlab run` ignores them.
  std::map<std::string, std::string> live_options;
  // Its settings as text both ways, by its option table (OptionTable::settings_text): what
  // the launch writes into a trace's metadata (labs/launch.h), and how the tests see that
  // every flag round-trips through the settings and through a trace.
  SettingsText settings_text;
  // Its exercises' hints, three levels each (exercises/<lab>_hints.cpp), by ExerciseInfo::id.
  std::span<const ex::ExerciseHints> hints;
  // The lab's own rules on a validated configuration of cfg.ranks thread ranks (a batch that
  // divides over them, a depth that fills the stages, ...): a UsageError before any rank
  // starts. A live run's launch asks before dtlab-viz's window opens (labs/launch.h: one that
  // cannot run is exit 2, not an empty window); the run itself checks the same. Empty: nothing
  // beyond the options.
  std::function<void(const LabConfig&)> check_config;
  // A small, fast run that passes the lab's checks and calls each of its exercises: flag →
  // value for `dtlab run` (the run-wide --ranks included, no "--"). The tests start from it
  // (the option fuzz, the option-effect table, the exercise track's run on the stubs), so a
  // new lab is covered by them without editing any test.
  std::map<std::string, std::string> small_run;
  // Runs an exercise needs that the small run with one choice changed does not reach (a choice
  // that needs a run-wide option beside it: the hierarchical all-reduce runs on --topology's
  // nodes), each whole, as small_run. The exercise track runs them on the stubs too.
  std::vector<std::map<std::string, std::string>> extra_runs;

  bool uses(RunOption o) const;
};

// The device a rank's buffers live on: the host, or GPU (rank mod GPU count) so several
// thread ranks may share one GPU. Under a multi-process launcher the node-local rank counts.
Device rank_device(Device::Kind kind, const Comm& comm);
// Where a run's tensors live, in words for reports and the trace's "device" metadata:
// "cpu", "cuda", or "standin" (the stand-in device).
std::string device_meta(const LabConfig& cfg);

const std::vector<LabInfo>& lab_registry();
// A lab a binary adds beside the built-in ones (a test's lab, tests/test_lab/): call it
// before the registry is first read, from a static initializer. Error once it has been read.
void register_lab(LabInfo (*info)());
const LabInfo* find_lab(std::string_view name);  // nullptr if unknown
// Every lab's exercise hints, in the registry's order; hint `level` (1..ex::kHintLevels) of
// exercise `id` (empty when there is none).
std::vector<ex::ExerciseHints> exercise_hints();
std::string_view exercise_hint(std::string_view id, int level);
// Fills unset lab options with their defaults and validates them all (UsageError).
LabConfig with_defaults(const LabInfo& lab, LabConfig cfg);

}  // namespace dtl
