// What the pipeline view draws, plain code so tests can check it (the lab: labs/pipeline).
//
// Measured: a pipeline run's trace has, per rank (= stage), a phase span labelled with the
// schedule ("gpipe", "1f1b", "interleaved", "zb-h1") around that schedule's compute spans
// "F", "B" and "W" (micro_batch, chunk and step set). pipeline_runs() finds each schedule's
// actions and its training steps; pipeline_step() cuts one step out: per stage its blocks
// relative to the step's start across stages, each stage's idle share and the bubble
//   1 − Σ_s busy_s / (P · makespan)
// as the lab measures it (labs/pipeline/pipeline_lab.cpp, across_stages), beside the
// formula the report gives for it (row "<schedule>.bubble": "predicted", "source" and
// "provenance").
//
// Simulated: meta "pipeline_simulated.<schedule>" = {"stages", "micro_batches", "chunks",
// "makespan", "bubble", "actions": [[stage, "F"|"B"|"W", micro-batch, chunk, begin_s,
// end_s], ...]} is the lab's simulator timeline with the run's mean action times; the
// compare mode draws those of every schedule stacked. Read defensively: a malformed entry
// is left out with a one-line note, never an exception.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "labs/report.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

// A fraction in [0, 1], 0 for NaN or ±∞: a trace is input, and its figures may be hostile.
inline double unit_share(double v) { return std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : 0.0; }

struct PipeBlock {
  int stage = 0;
  Pass op = Pass::forward;  // forward F, backward B (input grad), weight W (zero-bubble)
  int micro_batch = 0, chunk = 0;
  double begin = 0, end = 0;  // seconds from the step's start (measured) or the simulation's start
};

// Where a block's output goes in its schedule's placement (core/theory/schedule.h): an F's
// activation to the next virtual stage, a B's input gradient to the one before. +1: to a later
// stage (down the rows), -1: to an earlier one (up), 0: nowhere (the model's ends, a W, or a V's
// turn from virtual stage P−1 to P, which stays on the last stage). zb-v and dualpipev fold the
// model in a V (chunk 1 flows back up); the others loop (chunk c's last stage sends to stage 0).
int block_direction(const PipeBlock& k, std::string_view schedule, int stages, int chunks);

// What a block computes, for its colour: a forward; a full backward (input and weight gradients);
// the input gradient alone (torch's I: a B whose stage also runs a W of the same micro-batch and
// chunk, the zero-bubble split); the weight gradients (W).
enum class BlockRole : std::uint8_t { forward, backward, input_grad, weight_grad };
// Each block's role among `blocks` (one step's or one simulation's, every stage): a B is an I
// when its own stage holds the W of its micro-batch and chunk.
std::vector<BlockRole> block_roles(const std::vector<PipeBlock>& blocks);
const char* role_name(BlockRole r);
bool has_weight_blocks(const std::vector<PipeBlock>& blocks);  // any W: the backward is split  // "forward (F)", "full
                                                               // backward (B)", "input grad (I)", ...

// One training step of one schedule in the trace.
struct PipeStepRange {
  int step = 0;
  std::int64_t begin_ns = 0, end_ns = 0;  // its first action's begin and last action's end, over all stages
  bool complete = false;                  // every stage ran as many F as B (and W: none or as many) as the fullest
};

// Which trace rank draws which pipeline stage: every rank its own in the pipeline lab; in a
// dp × tp × pp run (the grid lab's meta "grid", or a simulated trace's "simulated_ranks"
// coordinates) the rank with dp 0 and tp 0 of each stage (the others run the same
// schedule), -1 for the rest.
struct PipelineStages {
  std::vector<int> of_rank;  // per trace rank: its stage, or -1
  int count = 0;             // stages
};
PipelineStages pipeline_stages(const TraceData& d);

// One schedule's measured actions.
struct PipelineRun {
  std::optional<ScheduleKind> kind;  // the schedule phase's role; none: a phase of no schedule
  std::string schedule;  // its name ("1f1b": the report's rows and the simulated runs use it), else the phase's label
  std::vector<std::size_t> actions;  // indices into TraceData::events, sorted by (step, stage, begin)
  std::vector<PipeStepRange> steps;  // ascending
  int last_complete = -1;            // the last complete step, -1: none
  PipelineStages stages;             // the trace ranks that draw the stages
};
struct PipelineRuns {
  std::vector<PipelineRun> runs;                             // in time order
  std::size_t dropped = 0;                                   // schedules beyond kMaxPipelineSchedules, not shown
  const PipelineRun* find(std::string_view schedule) const;  // by PipelineRun::schedule
  const PipelineRun* find(ScheduleKind kind) const;
};

// A run of `--schedule all` holds four; a hostile trace's 65535 phase labels do not become
// 65535 runs.
inline constexpr std::size_t kMaxPipelineSchedules = 8;

// The F/B/W compute spans on the main stream, each given to the schedule phase around it on
// its rank; spans in no phase (a live run's schedule whose phase has not ended yet) go to
// the meta "schedule" (or "pipeline"). O(events log events).
PipelineRuns pipeline_runs(const TraceData& d);

// The report's numbers for one schedule's bubble (row "<schedule>.bubble").
struct BubbleRow {
  double measured = -1, predicted = -1;         // idle shares in [0, 1]; -1: absent or malformed
  std::string source;                           // how the lab predicted it, in words: "(P-1)/(M+P-1)", "simulator"
  Provenance provenance = Provenance::formula;  // and whether that was a formula or the simulator
};
// Rows of the meta "report" whose id ends in ".bubble", by schedule; never throws.
std::map<std::string, BubbleRow> report_bubbles(const TraceData& d);

struct PipelineStep {
  std::string schedule;
  int step = -1;  // -1: the run has no actions
  bool complete = false;
  int stages = 0, micro_batches = 0, chunks = 1;
  std::int64_t begin_ns = 0, end_ns = 0;  // the step across stages, in trace time
  std::vector<PipeBlock> blocks;          // sorted by (stage, begin)
  std::vector<double> stage_idle;         // per stage: 1 − busy / makespan
  double bubble = 0;                      // 1 − Σ busy / (P · makespan)
  double makespan() const { return double(end_ns - begin_ns) * 1e-9; }
};
// `step` < 0: the last complete step, else the last one there is. P = run.stages.count.
PipelineStep pipeline_step(const TraceData& d, const PipelineRun& run, int step = -1);
// The step of `run` whose time range holds t, or -1.
int pipeline_step_at(const PipelineRun& run, std::int64_t t);

struct SimulatedPipeline {
  std::string schedule;
  int stages = 0, micro_batches = 0, chunks = 1;
  double makespan = 0, bubble = 0;  // seconds; the simulator's idle share
  std::vector<PipeBlock> blocks;    // as in the meta, sorted by (stage, begin), seconds from its start
  std::vector<double> stage_idle;   // per stage: 1 − busy / makespan
};
struct SimulatedPipelines {
  std::vector<SimulatedPipeline> runs;  // those named in `order` first, in that order; then by name
  std::vector<std::string>
      notes;  // one line per entry left out: "pipeline_simulated.x: action 3: stage 9 is not in 0..3"
};
inline const std::string kPipelineSimulated = meta_key_name(MetaKey::pipeline_simulated, "");
// Each simulated timeline holds stages x micro-batches x chunks x 3 actions; beyond this
// one is left out with a note (4096 micro-batches on 21 stages).
inline constexpr std::size_t kMaxSimulatedActions = std::size_t(1) << 18;

SimulatedPipelines simulated_pipelines(const TraceData& d, const std::vector<std::string>& order = {});
// One meta value; false (and `why`) when it is malformed.
bool parse_simulated_pipeline(std::string_view json, SimulatedPipeline& out, std::string& why);

}  // namespace dtl::viz
