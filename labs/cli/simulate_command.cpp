// `dtlab simulate`: one training step of a cluster too large to run here, simulated event by
// event (labs/simulate/cluster_sim.h) and written as a trace of a subset of its ranks.
//
//   dtlab simulate --model 175b --cluster a100-80gb --gpus 16384 --dp 128 --tp 8 --pp 16 --trace sim.json
//   dtlab simulate --model 7b --dp 8 --tp 8 --pp 2 --ranks-in-trace all --trace small.json --json
//   dtlab simulate --calibrate        # the grid lab measured here vs simulated (simulate_calibrate.cpp)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/theory/kernel_time.h"
#include "core/trace/trace_limits.h"
#include "core/util/files.h"
#include "core/util/units.h"
#include "labs/cli/commands.h"
#include "labs/cli/plan_options.h"
#include "labs/cli/simulate_calibrate.h"
#include "labs/cli/simulate_checkpoint.h"
#include "labs/cli/simulate_explain.h"
#include "labs/cli/validators.h"
#include "labs/report.h"
#include "labs/report_format.h"
#include "labs/simulate/sim_trace.h"
#include "labs/simulate/workload.h"

namespace dtl::cli {

namespace {

namespace th = dtl::theory;

struct SimulateArgs {
  PlanArgs plan;
  int steps = 2;
  std::string trace, ranks_in_trace = "default", algo = "nccl", calibrate_link = "pcie4";
  sim::ComputeModel compute = sim::ComputeModel::roofline;
  bool calibrate = false, explain = false;
  std::string versus;  // --explain's second layout
  CalibrationOptions calibration;
  std::string calibrate_compute_from = "unlinked-run";
  SimCheckpointArgs checkpoints;
};

std::string calibration_words() {
  const Calibration& c = last_calibration();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "±%.0f %% median, %.0f %% largest (step-time error of predictions vs the grid lab, %s: %s)",
                c.median_error_pct, c.max_error_pct, c.date, c.command);
  return buf;
}

// The compute model's own rows: one layer's time from its shapes and how much of the peak
// those shapes reach, and the FLOP/s per GPU a published run would quote (model FLOPs, and
// hardware FLOPs counting the recomputed forward).
void add_compute_rows(Report& rep, const th::Plan& pl, const sim::SimResult& r, sim::ComputeModel compute) {
  const double gpus = pl.cluster.gpus, per_gpu = r.step_s > 0 ? pl.tokens_per_step / (r.step_s * gpus) : 0;
  rep.add("sim.model_tflops", "model TFLOP/s per GPU (6Ψ + 12·L·h·s per token)",
          per_gpu * pl.model_flops_per_token / 1e12, "TFLOP/s");
  rep.add("sim.hardware_tflops", "hardware TFLOP/s per GPU (with the recomputed forward)",
          per_gpu * pl.hardware_flops_per_token / 1e12, "TFLOP/s");
  if (compute != sim::ComputeModel::roofline) return;
  const th::LayerTime l = th::transformer_layer_time(pl.cluster, pl.model, pl.config);
  th::KernelTime gemms = l.forward_gemm;
  gemms += l.backward_gemm;
  char from[160];
  std::snprintf(from, sizeof from, "roofline: GEMMs %s + memory-bound %s",
                format_value(l.forward_gemm.seconds, "s").c_str(), format_value(l.forward_memory.seconds, "s").c_str());
  rep.add("sim.layer_forward", "one layer's forward, one micro-batch, one GPU", l.forward_s(), "s").source = from;
  rep.add("sim.layer_backward", "one layer's backward (with any recomputation)", l.backward_s(), "s").source =
      "roofline";
  rep.add("sim.gemm_share", "a layer's GEMMs: useful FLOPs / (time · peak)",
          100 * th::achieved_share(pl.cluster, gemms), "%")
      .source = "tile and wave quantization";
}

// What each ZeRO stage does over dp in a step (cluster_sim.h).
const char* dp_schedule_words(int zero) {
  switch (zero) {
    case 0: return "all-reduce gradients, full optimizer step";
    case 1: return "reduce-scatter gradients, step on 1/dp, all-gather parameters (distributed optimizer)";
    case 2: return "reduce-scatter after each micro-batch, step on 1/dp, all-gather parameters";
    default: return "all-gather before each forward and backward, reduce-scatter after, step on 1/dp";
  }
}

// The end of the step: what the step waits for after its last backward, and the optimizer.
void add_step_end_rows(Report& rep, const th::Plan& pl, const sim::Workload& w, const sim::SimResult& r) {
  double exposed = 0, optimizer = 0;
  for (const auto& s : r.stages) exposed = std::max(exposed, s.dp_exposed), optimizer = std::max(optimizer, s.host);
  const char* gathers = w.zero == 1 || w.zero == 2 ? " + the parameter all-gather" : "";
  rep.add("sim.dp_exposed", "DP waited for after the last backward", exposed, "s").source =
      (w.dp_bucket_bytes > 0 ? std::string("the last bucket (--dp-comm overlapped)")
                             : std::string("gradient reduction")) +
      gathers;
  char from[160];
  std::snprintf(from, sizeof from, "AdamW, memory-bound: %g B per parameter at %s%s",
                th::optimizer_step_bytes(th::zero_precision(pl.config.convention)),
                format_value(pl.cluster.memory_Bps, "B/s").c_str(),
                w.zero < 1 ? ""
                : w.cp > 1 ? ", 1/(dp·cp) of them"
                           : ", 1/dp of them");
  rep.add("sim.optimizer", "optimizer step per GPU (busiest stage)", optimizer, "s").source = from;
}

// Context parallelism's exchange on the timeline, beside the plan's (core/theory/context_parallel.h).
void add_cp_row(Report& rep, const th::Plan& pl, const sim::SimResult& r) {
  double cp = 0;
  for (const auto& s : r.stages) cp = std::max(cp, s.cp);
  rep.add("sim.cp", std::string("CP ") + th::cp_algo_name(pl.config.cp_algo) + " exchange exposed per GPU", cp, "s")
      .predict(pl.time.cp, pl.config.cp_algo == th::CpAlgo::ring ? "plan: hops beyond blocks at peak·efficiency"
                                                                 : "plan: α-β, none hidden");
}

void add_ep_row(Report& rep, const th::Plan& pl, const sim::SimResult& r) {
  double ep = 0;
  for (const auto& s : r.stages) ep = std::max(ep, s.ep);
  rep.add("sim.ep", "EP all-to-alls per GPU", ep, "s").predict(pl.time.ep, "plan: NCCL's model");
}

// The report's header: the model and layout, the practice, each axis's links, the run's cost.
void describe_simulation(Report& rep, const th::Plan& pl, const sim::Workload& w, const sim::SimResult& r,
                         int trace_ranks) {
  char psi[64];
  std::snprintf(psi, sizeof psi, " (Ψ = %.4g billion)", pl.psi / 1e9);
  rep.setup = {
      "model " + pl.model.name + psi + ", dp " + std::to_string(w.dp) + " × tp " + std::to_string(w.tp) + " × pp " +
          std::to_string(w.pp) +
          (w.cp > 1 ? " × cp " + std::to_string(w.cp) + " (" + th::cp_algo_name(pl.config.cp_algo) + ")" : "") +
          " · ZeRO-" + std::to_string(w.zero) + (w.zero == 1 ? " (distributed optimizer)" : "") + " · M " +
          std::to_string(w.micro_batches) + " · " + pipeline::schedule_name(w.schedule) +
          (w.chunks > 1 ? " v " + std::to_string(w.chunks) : ""),
      "practice: " + th::practice_words(pl.config.practice), w.tp_route.describe("tp"),
      w.dp_route.describe(w.cp > 1 ? "dp·cp" : "dp"), w.pp_route.describe("pp", true)};
  char took[160];
  std::snprintf(took, sizeof took,
                "simulated in %.3f s: %zu distinct timelines (one per stage) stand for %d GPUs; %d in the trace",
                r.elapsed_s, r.stages.size(), w.gpus(), trace_ranks);
  if (w.cp > 1)
    rep.setup.insert(rep.setup.begin() + 3,
                     w.cp_route.describe("cp") + " (ring attention's hops); the dp collectives over dp·cp");
  rep.setup.push_back(took);
}

// How each figure was computed.
std::vector<std::string> simulation_notes(const th::Plan& pl, const sim::Workload& w, sim::ComputeModel compute_model) {
  const std::string dp_words =
      (w.dp_bucket_bytes > 0                  ? "the DP gradient reduction bucket by bucket beside the last backward"
       : w.zero3_prefetch >= 0 && w.zero == 3 ? "ZeRO-3's gathers per layer on the comm stream"
                                              : "DP at the end of the step") +
      std::string("; TP ") +
      (pl.config.practice.tp_comm == th::CommOverlap::overlapped ? "overlapped with its GEMMs." : "exposed.");
  return {"Every figure is simulated in seconds; its calibration error on this machine: " + calibration_words(),
          compute_model == sim::ComputeModel::roofline
              ? "Compute: each layer's GEMMs from their shapes on the GPU's achieved rate, quantized onto its " +
                    std::to_string(pl.cluster.sms) + " SMs in " + std::to_string(pl.cluster.tile_m) + "×" +
                    std::to_string(pl.cluster.tile_n) +
                    " tiles, attention and element-wise kernels as the practice "
                    "runs them (" +
                    (pl.cluster.spec_source.empty() ? "custom GPU" : pl.cluster.spec_source) +
                    "); TP all-reduces inside each layer, PP sends between stages, " + dp_words
              : "Compute (--compute flat): FLOPs / (peak · efficiency) per layer and micro-batch; TP all-reduces "
                "inside each layer, PP sends between stages, " +
                    dp_words,
          "The plan runs the same components through the same pipeline simulation (core/theory/step_model.h): its "
          "step is this one; `--explain` says where its time goes."};
}

Report simulate_report(const th::Plan& pl, const sim::Workload& w, const sim::SimResult& r, int trace_ranks,
                       sim::ComputeModel compute_model) {
  Report rep;
  rep.lab = "simulate";
  rep.backend = pl.cluster.name;
  rep.ranks = pl.cluster.gpus;
  rep.title = "simulate · " + std::to_string(pl.cluster.gpus) + " GPUs (" + pl.cluster.name + ")";
  rep.value_title = "simulated";
  describe_simulation(rep, pl, w, r, trace_ranks);
  const std::string cal = "simulated, " + calibration_words();
  rep.add("sim.step", "step time", r.step_s, "s").predict(pl.time.total(), "plan's formula").source = cal;
  // (zb-h2 and zb-v's formula counts steps tiled back to back: the simulation's tiled share beside it)
  rep.add("sim.bubble", pl.bubble_tiled ? "pipeline bubble (steps tiled)" : "pipeline bubble",
          100 * (pl.bubble_tiled ? r.pipeline_bubble_tiled : r.pipeline_bubble), "%")
      .predict(100 * pl.bubble, pl.bubble_formula);
  double compute = 0, tp = 0, pp = 0, dp = 0;
  for (const auto& s : r.stages)
    compute = std::max(compute, s.compute), tp = std::max(tp, s.tp), pp = std::max(pp, s.pp), dp = std::max(dp, s.dp);
  rep.add("sim.compute", "compute per GPU (busiest stage)", compute, "s").predict(pl.time.busy, "plan: busy");
  rep.add("sim.tp", "TP all-reduces per GPU", tp, "s").source =
      "α-β, " + std::string(w.tp_route.crosses_nodes() ? "inter" : "intra") + "-node";
  rep.add("sim.pp", "PP sends per GPU", pp, "s").source = "α-β";
  if (w.cp > 1) add_cp_row(rep, pl, r);
  if (pl.model.experts > 0) add_ep_row(rep, pl, r);
  rep.add("sim.dp", "DP collectives per GPU", dp, "s").source =
      std::string("α-β, ") + sim::comm_algo_name(w.dp_route.algo) + ": " + dp_schedule_words(w.zero);
  add_step_end_rows(rep, pl, w, r);
  rep.add("sim.tokens_per_s", "tokens/s", r.tokens_per_s, "tokens/s").predict(pl.tokens_per_s, "plan");
  rep.add("sim.mfu", "MFU", 100 * r.mfu, "%").predict(100 * pl.mfu, "plan");
  add_compute_rows(rep, pl, r, compute_model);
  rep.add("sim.elapsed", "time the simulation took", r.elapsed_s, "s");
  rep.add("sim.timelines", "distinct timelines computed", double(r.stages.size()), "");
  rep.notes = simulation_notes(pl, w, compute_model);
  return rep;
}

// What each traced GPU holds, from the plan: its model state, and one micro-batch's
// activations per layer (the planner's activations divided back by the busiest stage's
// layer-chunks in flight: theory::layers_in_flight, the planner's own count).
sim::SimMemory sim_memory(const th::Plan& pl) {
  sim::SimMemory m;
  m.params = pl.memory.params, m.grads = pl.memory.grads, m.optimizer = pl.memory.optimizer;
  const double in_flight = th::layers_in_flight(pl.model.layers, pl.config);
  m.activation_per_layer = in_flight > 0 ? pl.memory.activations / in_flight : 0;
  m.predicted_peak = pl.memory.total();
  m.predicted_text = "the planner's busiest GPU: model state " + format_value(pl.memory.model_state(), "B") +
                     " + activations " + format_value(pl.memory.activations, "B");
  return m;
}

// The trace's size, estimated before it is built: every traced rank holds its stage's spans
// once per step (the busiest stage bounds it). Past what the viewer reads (trace_limits), or
// what memory holds while the JSON is built (about 300 bytes an event: the event, its JSON
// text and its .dtlt copy), it is refused, naming the options that shrink it.
void require_trace_fits(const sim::SimResult& r, std::size_t ranks, int steps) {
  std::size_t spans = 0;
  for (const sim::StageTimeline& st : r.stages) spans = std::max(spans, st.spans.size());
  const double events = double(ranks) * double(steps) * double(spans + 8);  // (+ memory samples, marks)
  if (events > double(trace_limits::kMaxEvents))
    throw UsageError("--trace would hold about " + format_g(events) + " events (" + std::to_string(ranks) +
                     " ranks × " + std::to_string(steps) + " steps × " + std::to_string(spans) +
                     " spans), more than the " + std::to_string(trace_limits::kMaxEvents) +
                     " dtlab-viz reads; lower --steps or --ranks-in-trace");
  require_memory(300.0 * events, "--steps or --ranks-in-trace");
}

int run_simulate(const SimulateArgs& a) {
  if (a.calibrate) {
    CalibrationOptions o = a.calibration;
    o.link = a.calibrate_link, o.json = a.plan.json;
    for (CalibrationCompute c :
         {CalibrationCompute::unlinked_run, CalibrationCompute::same_run, CalibrationCompute::flop_rate})
      if (a.calibrate_compute_from == calibration_compute_name(c)) o.compute = c;
    return run_calibration(o);
  }
  const th::ClusterSpec c = cluster_from(a.plan);
  const th::Plan pl = th::plan(model_from(a.plan), c, config_from(a.plan));
  sim::Workload w = sim::workload_from_plan(pl, pl.config.schedule, sim::parse_comm_algo(a.algo), a.compute);
  w.chunks = pl.config.chunks;
  const std::vector<int> ranks = sim::parse_trace_ranks(a.ranks_in_trace, w);  // before simulating: bad input first
  require_writable_file(a.trace, "--trace");
  const sim::SimResult r = sim::simulate_step(w);
  if (!a.trace.empty()) require_trace_fits(r, ranks.size(), a.steps);
  if (a.explain && !a.trace.empty())
    throw UsageError("--explain prints where the step's time goes and writes no trace: drop --trace or --explain");
  if (a.explain) {  // where the step's time goes, and a second layout's beside it
    const th::Plan other = a.versus.empty() ? pl
                                            : th::plan(model_from(a.plan), cluster_from(versus_args(a.plan, a.versus)),
                                                       config_from(versus_args(a.plan, a.versus)));
    const Report rep = explain_report(pl, r.step_s, a.versus.empty() ? nullptr : &other);
    std::cout << (a.plan.json ? rep.to_json().dump(2) + "\n" : text_without_result(rep));
    return 0;
  }
  Report rep = simulate_report(pl, w, r, a.trace.empty() ? 0 : int(ranks.size()), a.compute);
  add_sim_checkpoint_rows(rep, pl, r.step_s, a.checkpoints);
  if (!a.trace.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    std::map<std::string, std::string> meta = {{"links", nlohmann::json{{"tp", w.tp_route.describe("tp")},
                                                                        {"dp", w.dp_route.describe("dp")},
                                                                        {"pp", w.pp_route.describe("pp", true)},
                                                                        {"cp", w.cp_route.describe("cp")}}
                                                             .dump()},
                                               {"simulated_gpus", std::to_string(w.gpus())},
                                               {"calibration", calibration_words()},
                                               {"report", rep.to_json().dump()}};
    meta[meta_key_name(MetaKey::gpus_per_node)] = std::to_string(c.gpus_per_node);
    sim::write_sim_trace(w, r, ranks, a.steps, sim_memory(pl), a.trace, meta, sim_checkpoints(pl, a.checkpoints));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rep.notes.push_back("trace: " + a.trace + " (+ .dtlt), " + std::to_string(ranks.size()) + " ranks × " +
                        std::to_string(a.steps) + " steps, written in " + std::to_string(s).substr(0, 5) + " s");
  }
  if (a.plan.json)
    std::cout << rep.to_json().dump(2) << "\n";
  else
    std::cout << text_without_result(rep);
  return 0;
}

// --calibrate runs its own grid shapes on this machine: every other option but --json would be
// ignored, and the --calibrate-* options mean nothing without it.
void check_calibrate_options(const CLI::App* p, bool calibrate) {
  const CLI::Option* json = p->get_option_no_throw("--json");
  const CLI::Option* calibrate_flag = p->get_option_no_throw("--calibrate");
  for (const CLI::Option* o : p->get_options()) {
    if (o->count() == 0 || o->get_lnames().empty() || o == json || o == calibrate_flag) continue;
    const std::string name = o->get_lnames().front();
    const bool calibration_option = name.rfind("calibrate-", 0) == 0;
    if (calibrate && !calibration_option)
      throw UsageError("--" + name +
                       ": --calibrate runs its own grid shapes; it takes only --calibrate-* options and --json");
    if (!calibrate && calibration_option) throw UsageError("--" + name + " needs --calibrate");
  }
}

// Options that would change nothing in this simulation are refused, saying why.
void require_simulate_options_apply(const CLI::App& p, bool writes_trace, sim::ComputeModel compute) {
  if (compute == sim::ComputeModel::roofline && p.count("--efficiency"))
    throw UsageError(
        "--efficiency is the flat compute model's share of peak; the roofline (the default --compute) times "
        "each GEMM from its shape instead: add --compute flat to use it");
  if (p.count("--versus") && !p.count("--explain"))
    throw UsageError("--versus is the second layout --explain shows: add --explain");
  if (!writes_trace)
    for (const char* flag : {"--steps", "--ranks-in-trace"})
      if (p.count(flag)) throw UsageError(std::string(flag) + " shapes the simulated trace: add --trace FILE");
  for (const char* flag : {"--gpu-memory", "--convention"})
    if (p.count(flag) && !(std::string(flag) == "--convention" && p.count("--checkpoint-every")))
      throw UsageError(std::string(flag) +
                       " sizes the memory plan, which the simulator does not use (it times a step; "
                       "--convention sizes --checkpoint-every's checkpoints): use it with dtlab plan");
}

}  // namespace

Command add_simulate_command(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  CLI::App* p =
      app.add_subcommand("simulate", "Simulate a step of a 3D run on a large cluster: report + per-rank trace");
  add_plan_options(p, a->plan);
  p->add_option("--steps", a->steps, "Steps in the trace")->check(whole_range(1, 1000))->capture_default_str();
  p->add_option("--trace", a->trace, "Write the simulated trace here (Chrome JSON + .dtlt)");
  p->add_option("--ranks-in-trace", a->ranks_in_trace, "default (one pipeline + one DP group), all, or 0,8,16-23")
      ->capture_default_str();
  p->add_option("--algo", a->algo,
                "Collectives: nccl (NCCL's tuning model picks ring/tree/NVLS × LL/LL128/Simple per call), or the α-β "
                "forms ring, tree, hierarchical (ring in node + ring across nodes)")
      ->check(CLI::IsMember({"nccl", "ring", "tree", "hierarchical"}))
      ->capture_default_str();
  p->add_option("--compute", a->compute,
                "How compute is timed: roofline (each GEMM from its shape on the GPU's peak and SMs, element-wise "
                "kernels on its memory bandwidth) or flat (FLOPs / (peak · --efficiency))")
      ->transform(named_choice(sim::kComputeModelNames))
      ->option_text("roofline|flat")
      ->default_str(sim::compute_model_name(sim::ComputeModel::roofline));
  p->add_flag("--explain", a->explain,
              "Where each millisecond of the step goes (GEMMs, attention, kernels, gaps, "
              "exposed communication, bubble, optimizer)");
  p->add_option("--versus", a->versus, "With --explain: a second layout beside it, e.g. dp=128,tp=4,pp=32");
  p->add_flag("--calibrate", a->calibrate, "Run the grid lab here and compare its step time with the simulation");
  p->add_option("--calibrate-link", a->calibrate_link, "With --calibrate: the emulated link preset")
      ->capture_default_str();
  p->add_option(
       "--calibrate-compute-us", a->calibration.compute_us,
       "With --calibrate: run the grid lab with --compute-us F (each F lasts at least F µs; 0: the real compute)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  p->add_option(
       "--calibrate-compute-from", a->calibrate_compute_from,
       "With --calibrate: the compute fed to the simulator, from a run without the link (a prediction), "
       "from the measured run itself (communication and schedule predicted), or one FLOP rate (the model before)")
      ->check(CLI::IsMember({"unlinked-run", "same-run", "flop-rate"}))
      ->capture_default_str();
  p->add_option("--calibrate-repeat", a->calibration.repeat,
                "With --calibrate: calibrations per shape (median and range)")
      ->check(whole_range(1, 100))
      ->capture_default_str();
  add_sim_checkpoint_options(p, a->checkpoints);
  p->add_flag("--json", a->plan.json, "Print the report as JSON");
  return [a, p] {
    check_calibrate_options(p, a->calibrate);
    require_simulate_options_apply(*p, !a->trace.empty(), a->compute);
    require_sim_checkpoint_options_apply(*p, a->checkpoints);
    require_cp_options_apply(*p, a->plan);
    if (!a->calibrate) resolve_practice(*p, a->plan);
    return run_simulate(*a);
  };
}

}  // namespace dtl::cli
