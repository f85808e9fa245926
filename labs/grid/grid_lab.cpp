// The grid lab: the MLP's blocks or the tiny GPT trained on a dp × tp × pp grid of ranks
// (Topology: tensor-parallel ranks neighbours, then data-parallel, then pipeline stages,
// as Megatron-LM numbers them), ZeRO-1 optionally on the data axis.
//
//   dtlab run grid --dp D --tp T --pp P [--zero 0|1] [--micro-batches M] [--schedule 1f1b|gpipe]
//                  [--model mlp|gpt] [--layers L --hidden H --seq S --batch B] [--heads A --vocab V]
//                  [--ranks D·T·P]
//
// Each stage holds L/P blocks (grid_stage.h; the GPT's first stage also its embeddings,
// its last ln_f and the tied head), each block split Megatron-style over the tp group; M
// micro-batches of the dp replica's rows flow through the stages (the learner's 1F1B and
// stage loop); the gradients are summed over the dp group. Every configuration ends with
// the weights of one rank training the whole model on the global batch (checked), and the
// report counts each axis's bytes from the events of its group.
#include "labs/grid/grid_lab.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "labs/grid/grid_rank.h"
#include "labs/grid/grid_stage.h"
#include "labs/measure.h"
#include "labs/pipeline/pipeline_lab.h"
#include "labs/shared_options.h"
#include "labs/tensor_parallel/tp_mlp.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/reference.h"

namespace dtl {

StageBlocks stage_blocks(int layers, int stages, int stage) {
  const int base = layers / stages, extra = layers % stages;
  const int first = stage * base + std::min(stage, extra);
  return {first, first + base + (stage < extra ? 1 : 0) - 1};
}

namespace {

// Rank 0 trains the whole model on a group of one (labs/train/reference.h) on the global
// batch; every rank gets its losses and final weights, in the whole model's order
// (GridStage::whole_indices).
OneRankRun one_rank_reference(Comm& world, const GridSettings& s, Device device) {
  TensorList all = reference_on_rank0(world, [&](Comm& alone) {
    OneRankRun run =
        s.model == GridModelKind::gpt ? train_gpt_one_rank(alone, s, device) : train_mlp_one_rank(alone, s, device);
    TensorList losses_weights{std::move(run.losses)};
    for (std::vector<float>& w : run.weights) losses_weights.push_back(std::move(w));
    return losses_weights;
  });
  OneRankRun run;
  run.losses = std::move(all.at(0));
  run.weights.assign(std::make_move_iterator(all.begin() + 1), std::make_move_iterator(all.end()));
  return run;
}

// This rank's bytes per axis since the marks, from its own events.
AxisBytes axis_bytes(Comm& world, std::size_t main_mark, std::size_t comm_mark, const GridShape& g) {
  Trace& tr = *world.trace();
  const int me = world.global_rank();
  AxisBytes b;
  const EventLog& comm = tr.log(me, kStreamComm);
  for (std::size_t i = comm_mark; i < comm.size(); ++i) {
    const Event& e = comm[i];
    if (e.kind != EventKind::collective || e.axis == GroupAxis::none) continue;
    // The pp axis's only collective in a step is the GPT's embedding group: a pair.
    const double N = e.axis == GroupAxis::dp ? g.dp : e.axis == GroupAxis::tp ? g.tp : 2;
    const double sent = theory::ring_bus_bytes(tr.label_role(e.label).collective, N, double(e.bytes));
    (e.axis == GroupAxis::dp ? b.dp : e.axis == GroupAxis::tp ? b.tp : b.embedding) += sent;
  }
  const EventLog& main = tr.log(me, kStreamMain);
  for (std::size_t i = main_mark; i < main.size(); ++i)
    if (main[i].kind == EventKind::send && main[i].axis == GroupAxis::pp) b.pp += double(main[i].bytes);
  return b;
}

// What the formulas say this rank sends per step on each axis.
AxisBytes predicted_bytes(const GridSettings& s, const Topology& topo, GridRank& r) {
  const double D = s.grid.dp, M = s.micro_batches, act = 4.0 * s.micro_rows() * s.hidden;
  AxisBytes b;
  // tp: the model's all-reduces per micro-batch (grid_stage.h); the GPT's tied embedding.
  b.tp = M * r.model().tp_bytes_per_micro_batch();
  b.embedding = r.model().embedding_bytes();
  // pp: each micro-batch's activation to the next stage, its gradient to the previous one.
  b.pp = M * act * ((topo.is_last_stage() ? 0 : 1) + (topo.is_first_stage() ? 0 : 1));
  // dp: an all-reduce of the stage's gradients; ZeRO-1 a reduce-scatter and an all-gather of
  // the padded D·chunk elements — the same bytes.
  const double n = s.zero == GridZero::none ? double(r.local_params()) : D * double(r.zero_chunk());
  b.dp = 2 * (D - 1) / D * n * 4;
  if (topo.is_last_stage()) b.dp += 2 * (D - 1) / D * 8;  // and the last stage's loss (one double) summed over dp
  return b;
}

// The idle share of the step over every rank: 1 − Σ busy / (N · (last end − first start)),
// the step from the first action's start on any rank to the last one's end. Every pipeline
// of the grid at once, as the timeline's idle over that step counts it (viz/model/step_idle.h).
double bubble_of(Topology& topo, const GridRank& r) {
  Comm& world = topo.world();
  double span[2] = {-r.begin(), r.end()}, busy = r.busy();
  world.all_reduce(span, span, 2, DType::f64, ReduceOp::max);
  world.all_reduce(&busy, &busy, 1, DType::f64, ReduceOp::sum);
  const double makespan = span[0] + span[1];
  return makespan > 0 ? 1 - busy / (world.size() * makespan) : 0;
}

// The largest difference of any loss and any held weight (all-gathered over the tp group)
// from one rank's, over all ranks.
// (losses: of the steps this run trained, the last ones; a resumed run trained fewer)
void compare_with_one_rank(Comm& world, const GridSettings& s, GridRank& rank, const std::vector<float>& losses,
                           GridMeasurement& m, Device device) {
  const OneRankRun one = one_rank_reference(world, s, device);
  m.max_loss_diff = 0;
  const std::size_t skipped = one.losses.size() - losses.size();
  for (std::size_t i = 0; i < losses.size(); ++i)
    m.max_loss_diff = larger_difference(m.max_loss_diff, double(std::fabs(losses[i] - one.losses[skipped + i])));
  const std::vector<std::string> names = rank.model().names();
  const std::vector<std::size_t> whole = rank.model().whole_indices();
  m.max_weight_diff = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {  // the GPT's last stage: its copy of wte too
    const std::vector<float> w = rank.model().full_params(names[i]);
    const std::vector<float>& r = one.weights[whole[i]];  // the same tensor in the whole model
    for (std::size_t k = 0; k < w.size(); ++k)
      m.max_weight_diff = larger_difference(m.max_weight_diff, double(std::fabs(w[k] - r[k])));
  }
  world.all_reduce(&m.max_weight_diff, &m.max_weight_diff, 1, DType::f64, ReduceOp::max);
}

// --resume's rules: the MLP's (the tensor_parallel lab's too) or the GPT's on the counting task.
ResumeRules grid_resume_rules(const GridSettings& s) {
  if (s.model == GridModelKind::mlp && s.mlp_form == TpMlpForm::layer_stack) {  // the MLP labs' model and data
    ResumeRules r = mlp_resume_rules(s.global_rows(), s.steps);                 // (the grid among them)
    r.data.batch =
        "--batch " + std::to_string(s.batch) + " × --seq " + std::to_string(s.seq) + " (the MLP labs' --batch)";
    return r;
  }
  return s.model == GridModelKind::mlp ? tp_mlp_resume_rules(s.batch, s.seq, s.steps)
                                       : counting_gpt_resume_rules(s.batch, s.steps);
}

// A checkpoint of the ddp, zero or pipeline lab (or the grid's stack) is their MLP's, one flat
// 'params' tensor: the grid's blocks cannot read it, its --mlp-form stack can. Says so rather than
// only naming the lab.
void require_mlp_form_for(const GridSettings& s) {
  if (s.resume.empty() || s.model != GridModelKind::mlp || s.mlp_form == TpMlpForm::layer_stack) return;
  const Manifest m = read_manifest(resolve_checkpoint(s.resume));
  if (m.tensors.count("params") > 0)
    throw UsageError("--resume " + m.dir + " was saved by the " + m.position.lab +
                     " lab, whose MLP is a stack of Linear → GELU layers: resume it with --mlp-form stack "
                     "(--hidden = its --width, --layers = its --depth / 2)");
}

// The training steps, a phase of the schedule (the pipeline view draws its stages' F and B;
// the checks after it are not in it): each step's time (the first warms up) and loss.
void train_steps(Comm& world, const LabConfig& cfg, const GridSettings& s, GridRank& rank, GridMeasurement& m,
                 std::vector<double>& steps, std::vector<float>& losses) {
  const ScopedSpan phase(
      world.trace(), world.global_rank(), EventKind::phase,
      world.trace()->label(pipeline::schedule_name(s.schedule), {.part = RunPart::timed, .schedule = s.schedule}));
  require_mlp_form_for(s);
  // --resume: every rank reads its stage's blocks of its tp slice, whatever grid saved them.
  const int first = resume_run(world, s.resume, grid_resume_rules(s), m.checkpoints,
                               [&](const Manifest& man) { return rank.load_checkpoint(man); });
  for (int step = first; step < s.steps; ++step) {
    report_progress(world, cfg, "grid: step " + std::to_string(step + 1) + " of " + std::to_string(s.steps));
    const std::size_t mm = world.trace()->log(world.global_rank(), kStreamMain).size();
    const std::size_t cm = world.trace()->log(world.global_rank(), kStreamComm).size();
    world.barrier();
    const double t0 = double(world.trace()->now_ns()) * 1e-9;
    const float loss = rank.step(step);
    if (step > first || s.steps == first + 1) steps.push_back(double(world.trace()->now_ns()) * 1e-9 - t0);
    (step == first ? m.first_loss : m.last_loss) = loss;
    losses.push_back(loss);
    m.mine.bytes = axis_bytes(world, mm, cm, s.grid);  // the last step's
    checkpoint_if_due(world, checkpoint_plan(s), train_position("grid", step + 1, grid_resume_rules(s).data),
                      m.checkpoints, [&] { return rank.stage_checkpoint(); });
  }
  finish_checkpoints(world, m.checkpoints);
  if (losses.size() == 1) m.last_loss = m.first_loss;
}

}  // namespace

GridMeasurement run_grid(Comm& world, const LabConfig& cfg, const GridSettings& s) {
  Topology topo(world, s.grid);
  const std::size_t main_mark = world.trace()->log(world.global_rank(), kStreamMain).size();
  MemoryTracker mem(world.global_rank(), world.trace());
  const Device device = rank_device(cfg.device, world);
  GridRank rank(topo, s, mem, device);
  const int in_flight =
      pipeline::max_in_flight(pipeline::make_schedule(s.schedule, {s.grid.pp, s.micro_batches, 1}), topo.coord().pp);
  publish_memory_formula(
      world, double(rank.local_params()), rank.model().activation_peak(in_flight),
      "16 B/param x the rank's slice (/tp, /pp) + a micro-batch's activations x those its stage keeps in flight");
  rank.model().publish_activation_formula(world, in_flight);
  GridMeasurement m;
  std::vector<double> steps;
  std::vector<float> losses;
  train_steps(world, cfg, s, rank, m, steps, losses);
  GridRankFigures& f = m.mine;
  f.predicted = predicted_bytes(s, topo, rank);
  m.bubble = bubble_of(topo, rank);
  f.param_bytes = peak_bytes_since(world, main_mark, MemTag::param);
  f.grad_bytes = peak_bytes_since(world, main_mark, MemTag::grad);
  f.optimizer_bytes = peak_bytes_since(world, main_mark, MemTag::optimizer);
  f.activation_peak = peak_bytes_since(world, main_mark, MemTag::activation);
  const std::size_t opt_elems = s.zero == GridZero::none ? rank.local_params() : rank.zero_chunk();
  f.predicted_optimizer = 8.0 * double(opt_elems);  // AdamW's m and v, fp32
  // One micro-batch's activations (the model's count), times as many as the schedule
  // keeps in flight.
  f.predicted_activation = rank.model().activation_peak(
      pipeline::max_in_flight(pipeline::make_schedule(s.schedule, {s.grid.pp, s.micro_batches, 1}), topo.coord().pp));
  m.step = repeated(steps);
  m.device_vs_tracker = device_vs_tracker_bytes(world, mem, device, double(rank.model().activation_cache_bytes()));
  if (GptActivationFigures a; rank.model().activation_figures(world, a)) m.activation = a;
  if (s.check) compare_with_one_rank(world, s, rank, losses, m, device);
  constexpr std::size_t kDoubles = sizeof(GridRankFigures) / sizeof(double);
  static_assert(sizeof(GridRankFigures) == kDoubles * sizeof(double), "GridRankFigures is gathered as doubles");
  m.ranks.resize(std::size_t(world.size()));
  world.all_gather(&m.mine, m.ranks.data(), kDoubles, DType::f64);
  return m;
}

const OptionTable<GridSettings>& grid_option_table() {
  static const OptionTable<GridSettings> table = [] {
    OptionTable<GridSettings> t;
    using ScheduleKind = pipeline::ScheduleKind;
    t.choice("model", &GridSettings::model, GridModelKind::mlp,
             {{GridModelKind::mlp, "mlp"}, {GridModelKind::gpt, "gpt"}}, "the model on the grid")
        .choice("mlp-form", &GridSettings::mlp_form, TpMlpForm::residual_blocks,
                {{TpMlpForm::residual_blocks, "blocks"}, {TpMlpForm::layer_stack, "stack"}},
                "the MLP: blocks (h → 4h → h, residual, its regression task) or stack (the ddp/zero/pipeline labs' "
                "Linear→GELU layers of width h, two per block, on their teacher data and AdamW: continues their "
                "checkpoints)")
        .integer(
            "dp", [](GridSettings& s) -> int& { return s.grid.dp; }, 0, 0, 4096,
            "data-parallel replicas D (0: --ranks / (tp·pp))")
        .integer(
            "tp", [](GridSettings& s) -> int& { return s.grid.tp; }, 2, 1, 4096, "tensor-parallel ranks per stage T")
        .integer(
            "pp", [](GridSettings& s) -> int& { return s.grid.pp; }, 2, 1, 4096, "pipeline stages P")
        .choice("zero", &GridSettings::zero, GridZero::none, {{GridZero::none, "0"}, {GridZero::optimizer_states, "1"}},
                "ZeRO stage on the data axis")
        .choice("schedule", &GridSettings::schedule, ScheduleKind::one_f_one_b,
                {{ScheduleKind::gpipe, "gpipe"}, {ScheduleKind::one_f_one_b, "1f1b"}}, "pipeline schedule")
        .integer("micro-batches", &GridSettings::micro_batches, 4, 1, 4096, "micro-batches per step M");
    add_block_rows(t, {.layers = 4,
                       .hidden = 64,
                       .heads = 4,
                       .seq = 16,
                       .batch = 8,
                       .vocab = 64,
                       .steps = 3,
                       .layers_help = "MLP blocks (h → 4h → h) or GPT layers, split over the stages",
                       .batch_help = "global batch (sequences per step)"});
    t.number(
         "compute-us", &GridSettings::compute_us, 0.0, 0, 1e5,
         "a stage's forward of a micro-batch lasts this many µs, its backward twice that (0: the real compute's time)")
        .choice("check", &GridSettings::check, true, kOnOffNames, "train one rank too and compare the weights")
        .choice("recompute", &GridSettings::recompute, theory::Recompute::none, kRecomputeNames, kRecomputeHelp);
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

LabInfo grid_lab_info() {
  return {
      "grid",
      "3D parallelism: data × tensor × pipeline (+ ZeRO-1) on one grid; bytes per axis, memory and bubble vs formulas",
      {RunOption::device, RunOption::faults, RunOption::step},
      grid_option_table().specs(),
      {},
      run_grid_lab,
      nullptr,
      StepUnit::collectives,
      /*overlaps_compute=*/false,
      {kTopologyView, kPipelineView, ViewKind::timeline, ViewKind::memory, ViewKind::report},
      {},
      grid_option_table().settings_text(),
      {},
      [](const LabConfig& c) { grid_settings(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "4"}, {"layers", "2"}, {"hidden", "16"}, {"seq", "8"}, {"batch", "4"}, {"steps", "2"}},
  };
}

}  // namespace dtl
