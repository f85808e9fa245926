// The typed vocabulary that labs, traces and the visualizer share: what a span or a
// collective *is* (which collective, which algorithm, which part of the run, F/B/W, which
// pipeline schedule or ZeRO stage, which block or bucket), and every trace metadata key.
//
// A trace label is words for people ("fwd block 3", "ZeRO-2", "ring all-reduce"); its Role
// is what programs read. The two travel together in the label table (Trace::label(name,
// role)), in the Chrome JSON's "args" and in the .dtlt, so a view asks
// `role.pass == Pass::forward`, never whether a label starts with "fwd". Renaming a label
// changes a picture's words, never its logic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dtl {

// The one enum per concept: labs, core/theory's formulas, traces and the viewer all read
// these (theory includes this header: it is pure data, no Comm, no I/O).

// A library collective (Comm's calls), or none. The collectives lab and the formulas use the
// same values for the lab's own algorithms (a ring all-reduce is all_reduce by ring).
// (all_to_allv after barrier: a trace written before it existed reads the same.)
enum class CollectiveKind : std::uint8_t {
  none,
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  reduce,
  all_to_all,
  barrier,
  all_to_allv
};
inline constexpr CollectiveKind kLastCollectiveKind = CollectiveKind::all_to_allv;
// How a collective's bytes moved: a lab's own point-to-point algorithm, or the library's call.
// The α-β formulas (core/theory/collectives.h) take naive, ring, tree, rhd, ring_sliced
// (the ring pipelined in slices) and double_tree (NCCL's two complementary binary trees).
enum class AlgorithmKind : std::uint8_t {
  none,
  library,
  naive,
  ring,
  tree,
  rhd,
  ring_sliced,
  double_tree,
  hierarchical
};
// Which part of a run a span belongs to: the timed steps are what reports measure; the
// one-rank reference and the checks are there to prove them (the viewer hides the
// reference unless asked: it would fill the timeline).
enum class RunPart : std::uint8_t { none, setup, timed, check, reference, checkpoint, checkpoint_write, resume };
// The checkpoint parts (labs/train/checkpoint_run.h): checkpoint, a save that stops training (a
// synchronous save whole; an asynchronous one its staging copy, then its finish after the next
// step); checkpoint_write, a rank's file written (beside training when asynchronous); resume, the
// checkpoint read before a resumed run's first step. Spans inside a run, not runs of their own.
inline bool is_checkpoint_part(RunPart p) {
  return p == RunPart::checkpoint || p == RunPart::checkpoint_write || p == RunPart::resume;
}
// The work of a training step: forward (F), backward (B: the input gradient, or the whole
// backward unless a zero-bubble schedule splits it), weight gradient (W), optimizer.
// recompute: a forward run again inside backward for the activations it did not keep
// (activation recomputation, core/theory/recompute.h). A pipeline schedule's actions are
// forward, backward and weight (core/theory/schedule.h), written F, B and W.
enum class Pass : std::uint8_t { none, forward, backward, weight, optimizer, recompute };
// A mixture-of-experts layer's exchanges (the experts lab): the per-expert counts, the token
// rows to their experts (dispatch) and back (combine); backward runs the same two layouts.
enum class ExpertExchange : std::uint8_t { none, counts, dispatch, combine };
// Pipeline schedules (core/theory/schedule.h has their rules); csv: one read from
// torch.distributed.pipelining's CSV format (core/theory/schedule_csv.h).
enum class ScheduleKind : std::uint8_t {
  gpipe,
  one_f_one_b,
  interleaved,
  zb_h1,
  zb_h2,
  zb_v,
  interleaved_zb,
  dualpipe_v,
  csv
};
inline constexpr ScheduleKind kLastScheduleKind = ScheduleKind::csv;
// What one step of a stepped run moves (StepGate), and what --inject-fault counts (FaultPlan):
// a point-to-point transfer (a send and its receive), or a library collective of a group
// (labs built on them: DDP, ZeRO, tensor parallelism). A lab names its unit in its registry entry.
enum class StepUnit : std::uint8_t { transfers, collectives };

// What a label stands for. Unset fields are none/-1; a span usually sets one or two.
struct Role {
  CollectiveKind collective = CollectiveKind::none;
  AlgorithmKind algorithm = AlgorithmKind::none;
  RunPart part = RunPart::none;
  Pass pass = Pass::none;
  std::optional<ScheduleKind> schedule;            // a pipeline run's phase span
  std::int8_t zero_stage = -1;                     // a ZeRO run's phase span: 0 (DDP) .. 3
  std::int8_t prefetch = -1;                       //   and, in a sweep of ZeRO-3's prefetch depth, the depth (0..64)
  std::int16_t block = -1;                         // the layer / transformer block a compute span covers
  std::int16_t bucket = -1;                        // a gradient bucket's index (0..16382)
  ExpertExchange exchange = ExpertExchange::none;  // an MoE all-to-all's part
  bool operator==(const Role&) const = default;
  bool empty() const { return *this == Role{}; }
};

// What a backend's library collective event stands for: its kind, and what the code that
// posts it says about it from this thread (ScopedCollectiveRole: DDP's gradient bucket).
Role library_collective_role(CollectiveKind c);
// While it lives, the library collectives this thread posts carry `extra`'s fields (a bucket
// index, a block) beside their kind: the caller says what a collective is for without the
// collective's code knowing (the DDP lab wraps the learner's launch_ready_buckets in one).
class ScopedCollectiveRole {
 public:
  explicit ScopedCollectiveRole(const Role& extra);
  ~ScopedCollectiveRole();
  ScopedCollectiveRole(const ScopedCollectiveRole&) = delete;
  ScopedCollectiveRole& operator=(const ScopedCollectiveRole&) = delete;

 private:
  Role saved_;
};

const char* collective_kind_name(CollectiveKind c);  // "all_reduce", ..., "barrier" ("" for none)
const char* algorithm_kind_name(
    AlgorithmKind a);                  // "library", "naive", "ring", "tree", "rhd", "ring_sliced", "double_tree"
const char* run_part_name(RunPart p);  // "setup", "timed", "check", "reference"
const char* pass_name(Pass p);         // "forward", "backward", "weight", "optimizer", "recompute"
const char* schedule_kind_name(ScheduleKind s);      // "gpipe", "1f1b", "interleaved", "zb-h1", ... "csv"
const char* expert_exchange_name(ExpertExchange x);  // "counts", "dispatch", "combine" ("" for none)
const char* pass_letter(Pass p);                     // a schedule's "F", "B", "W" ("" for the others)
const char* step_unit_noun(StepUnit u);              // one step's words: "transfer", "collective"
// The reverse, for readers of traces (nullopt: not a name of that enum; "" is none).
std::optional<CollectiveKind> parse_collective_kind(std::string_view s);
std::optional<AlgorithmKind> parse_algorithm_kind(std::string_view s);
std::optional<RunPart> parse_run_part(std::string_view s);
std::optional<Pass> parse_pass(std::string_view s);
std::optional<ScheduleKind> parse_schedule_kind(std::string_view s);
std::optional<ExpertExchange> parse_expert_exchange(std::string_view s);
std::optional<Pass> parse_pass_letter(std::string_view s);  // "F", "B", "W"

// The Role as Chrome-trace "args" members: `,"collective":"all_reduce","block":3` (empty
// for an empty Role). The reader (viz/model/chrome_trace_reader.cpp) reads the same keys.
std::string role_json_members(const Role& r);
// A Role as one number, equal exactly when the Roles are: what label tables index by
// (enums below 16; the ZeRO stage below 15 and the bucket below 16383, Error otherwise; the
// int8 and int16 fields in their own bits).
std::uint64_t role_code(const Role& r);
// What a span or collective is for, in words for people: "gradient bucket 2", "layer 3 ·
// backward", "ZeRO-2" ("" for none): the terminal step-through and the timeline's boxes.
std::string role_purpose(const Role& r);
// A short key naming the Role's typed fields ("zero_stage=2", "schedule=1f1b"): what
// metadata about one phase of a run is keyed by (MetaKey::phase_formula_bytes).
std::string role_key(const Role& r);

// Every key of a trace's metadata (Trace::set_meta, the JSON's otherData, the .dtlt).
enum class MetaKey : std::uint8_t {
  lab,                       // the lab's name
  world_size,                // ranks
  chunks,                    // the chunk grid's size (0: none)
  bytes,                     // the collectives lab's buffer per rank
  dtype,                     // its element type
  device,                    // where tensors lived: cpu, cuda, standin
  schedule,                  // the pipeline lab's --schedule
  report,                    // the run's report, as JSON
  error,                     // why a run failed
  source,                    // a merged trace's origin
  grid,                      // the grid lab's dp×tp×pp, as JSON
  gpus_per_node,             // ranks r / gpus_per_node share a node (the topology view)
  tp_split,                  // the tensor-parallel split picture, as JSON
  simulated,                 // dtlab simulate's trace: what it simulated
  simulated_ranks,           //   and how many ranks
  predicted_bytes_per_rank,  // the memory formula for every rank
  predicted_bytes_formula,   //   in words
  phase_formula_bytes,       // prefix: + "." + role_key(phase's role): that phase's formula
  phase_formula_text,        //   in words
  pipeline_simulated,        // prefix: + "." + schedule name: the simulator's timeline, JSON
  live_plots,                // a running lab's curves so far ({"plots": [...]}, the report's plot schema)
  micro_batches,             // the pipeline and grid labs' --micro-batches ("micro-batches": the option's own value)
  predicted_bytes_of_rank,   // prefix: + "." + rank: that rank's memory formula, where ranks differ (pipeline stages)
  moe_routing,               // the experts lab's routing of one step, as JSON (labs/experts/experts_measure.cpp)
  activation_formula,  // prefix: + "." + rank: the GPT's activation bytes by part, as JSON (gpt_activation_report.h)
};
const char* meta_key_name(MetaKey k);
// A prefixed key's full name: "phase_formula_bytes.zero_stage=2".
std::string meta_key_name(MetaKey prefix, std::string_view suffix);

// Where a report row's predicted value comes from (labs/report.h): a closed form (the
// default), or the pipeline simulator run with this run's measured action times. The row's
// `source` says it in words for people; the viewer decides on this ("simulated" beside a
// bubble, "formula ..." otherwise). In JSON a row carries "provenance" only when it is not a
// formula, so formula rows read as before.
enum class Provenance : std::uint8_t { formula, simulated };
const char* provenance_name(Provenance p);                       // "formula", "simulated"
std::optional<Provenance> parse_provenance(std::string_view s);  // the reverse (nullopt: neither)

}  // namespace dtl
