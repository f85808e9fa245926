// The GPT lab's run (gpt_lab.h): build the model on the tp group, load a checkpoint if
// asked, train with AdamW while measuring the held-out loss, save, sample.
#include "labs/gpt/gpt_lab.h"

#include <chrono>

#include "core/error.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "core/util/files.h"
#include "core/util/safetensors.h"
#include "core/util/units.h"
#include "labs/measure.h"
#include "labs/shared_options.h"
#include "labs/train/gpt_checkpoint.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/optimizer.h"

namespace dtl {

GptLabSettings gpt_lab_settings(const LabConfig& cfg, int T, const TextCorpus& corpus) {
  GptLabSettings s = gpt_option_table().parse(cfg.options);
  s.model.vocab = corpus.vocab_size();
  require_checkpoint_options(gpt_option_table(), cfg.options, s, true, "");
  if ((s.checkpoint_every > 0 || !s.resume.empty()) && s.precision != DType::f32)
    throw UsageError(
        "the GPT's sharded checkpoints are fp32 only (not yet its 16-bit copy and master): use --precision fp32");
  if (!s.resume.empty() && !s.load.empty())
    throw UsageError("--resume and --load both give the starting weights: give one of them");
  require_writable_file(s.save, "--save");  // before minutes of training, not after
  // A device (/dev/zero never ends) or a file larger than memory is refused before reading it.
  if (!s.load.empty())
    require_memory(2.0 * double(require_readable_file(s.load, "--load", UINTMAX_MAX)), "--load's checkpoint");
  if (s.recompute != theory::Recompute::none && s.steps == 0)
    throw UsageError(
        "--recompute changes what training keeps for backward; with --steps 0 nothing trains: give "
        "--steps, or leave --recompute out");
  const std::string problem = gpt_config_problem(s.model, T, ex::TpMode::plain);
  if (!problem.empty())
    throw UsageError("gpt lab on --ranks " + std::to_string(T) + " (tensor-parallel degree): " + problem +
                     " (the character vocabulary has " + std::to_string(corpus.vocab_size()) + " entries)");
  // Thread ranks share this process: the model state (16 B/param over all ranks) and each
  // rank's activations and as much workspace again, refused before anything is allocated.
  const GptConfig& c = s.model;
  // With recomputation, a twin that keeps everything checks the gradients: twice that.
  const double twins = s.recompute == theory::Recompute::none ? 1.0 : 2.0;
  require_memory(twins * (16.0 * gpt_approx_params(c) + 2.0 * T * gpt_activation_bytes(c, T, ex::TpMode::plain)),
                 "--layers, --hidden, --seq or --batch");
  return s;
}

namespace {

// The mean loss over the held-out batches, forward only.
double held_out_loss(Gpt& model, const TextCorpus& corpus, const GptLabSettings& s) {
  double sum = 0;
  for (int i = 0; i < kHeldOutBatches; ++i) {
    const TokenBatch b = corpus.batch(Split::held_out, std::uint64_t(i), s.model.batch, s.model.seq, s.seed);
    sum += model.forward(b.tokens.data(), b.targets.data());
  }
  return sum / kHeldOutBatches;
}

void train(Comm& comm, const LabConfig& cfg, Gpt& model, MemoryTracker& mem, const TextCorpus& corpus,
           const GptLabSettings& s, GptTrainingLog& log) {
  AdamW opt(model.whole_params(), model.device(), mem, s.adamw);  // mixed precision: with the fp32 master
  LossScaler scaler(s.precision);                                 // fp16 only; a fixed 1 otherwise
  const auto evaluate = [&](int step) {
    log.held_out_step.push_back(step);
    log.held_out_loss.push_back(held_out_loss(model, corpus, s));
  };
  // --resume: each rank reads its slices and AdamW's moments of them (any --ranks), and the
  // run continues with the batches of the steps after the checkpoint's.
  const DataOrder order{std::uint64_t(s.model.batch), s.seed,
                        "--batch " + std::to_string(s.model.batch) + " --seed " + std::to_string(s.seed)};
  const int first = resume_run(comm, s.resume, {{"gpt"}, order, s.steps}, log.checkpoints,
                               [&](const Manifest& m) { return load_gpt_sharded(m, model, opt); });
  evaluate(first);
  double seconds = 0;
  for (int step = first + 1; step <= s.steps; ++step) {
    const auto start = RunClock::now();
    float loss = 0;
    {                            // the step as a span holding its blocks: the timeline opens on one (and names it)
      Trace* tr = comm.trace();  // (the lab also runs untraced)
      const ScopedSpan whole(tr, comm.global_rank(), EventKind::compute,
                             tr ? tr->label("training step") : std::uint16_t(0), step);
      const TokenBatch b = corpus.batch(Split::train, std::uint64_t(step), s.model.batch, s.model.seq, s.seed);
      loss = model.forward_backward(b.tokens.data(), b.targets.data(), scaler.scale());
      scaler.update(opt.step(model.whole_params(), 1.0f / scaler.scale()));
    }
    checkpoint_if_due(comm, checkpoint_plan(s), train_position("gpt", step, order), log.checkpoints,
                      [&] { return stage_gpt_checkpoint(model, opt); });
    seconds += std::chrono::duration<double>(RunClock::now() - start).count();
    log.train_step.push_back(step);
    log.train_loss.push_back(loss);
    if (step % s.eval_every == 0 || step == s.steps) evaluate(step);
    // A live viewer's curve so far: about 200 times in a run, so long runs cost no more.
    if (comm.global_rank() == 0 && (step % std::max(1, s.steps / 200) == 0 || step == s.steps))
      publish_live_plots(comm.trace(), loss_curves(log));
    if (step % 10 == 0 || step == s.steps) {
      char line[96];
      std::snprintf(line, sizeof line, "step %d of %d: train loss %.3f", step, s.steps, double(loss));
      report_progress(comm, cfg, line);
    }
  }
  finish_checkpoints(comm, log.checkpoints);
  log.train_seconds = seconds;
  log.skipped_steps = scaler.skipped_steps();
  log.device_vs_tracker = device_vs_tracker_bytes(comm, mem, model.device(),
                                                  double(model.activation_cache_bytes()));  // the optimizer still alive
}

void record_memory(const MemoryTracker& mem, const Gpt& model, GptTrainingLog& log) {
  log.param_bytes = double(mem.peak(MemTag::param));
  log.grad_bytes = double(mem.peak(MemTag::grad));
  log.optimizer_bytes = double(mem.peak(MemTag::optimizer) + mem.peak(MemTag::master));
  log.activation_bytes = double(mem.peak(MemTag::activation));
  log.predicted_activation =
      gpt_activation_bytes(model.config(), model.tp_size(), ex::TpMode::plain, {}, model.recompute());
  log.local_params = model.num_params();
}

// With recomputation: the first training batch's gradients against a twin that keeps every
// activation (same seed, same checkpoint), compared bit for bit; a check phase in the trace.
double compare_with_twin(Comm& comm, const LabConfig& cfg, Gpt& model, const TextCorpus& corpus,
                         const GptLabSettings& s) {
  Trace* tr = comm.trace();
  const ScopedSpan phase(tr, comm.global_rank(), EventKind::phase,
                         tr ? tr->label("recomputation check", {.part = RunPart::check}) : std::uint16_t(0));
  MemoryTracker twin_mem(comm.global_rank(), nullptr);  // its bytes are not the run's
  Gpt twin(s.model, ex::TpGroup{comm, ex::TpMode::plain}, twin_mem, s.seed, rank_device(cfg.device, comm), {},
           s.precision);
  if (!s.load.empty()) load_gpt_checkpoint(twin, read_safetensors(s.load));
  const TokenBatch b = corpus.batch(Split::train, 1, s.model.batch, s.model.seq, s.seed);
  return recompute_gradient_mismatches(comm, model, twin, b.tokens.data(), b.targets.data());
}

// Rank 0 writes; every rank learns whether it could, so none waits for a file that failed.
// Returns rank 0's error ("" when saved): a full disk fails the run (exit 1) but keeps its
// report, and the file that was there is untouched (the writer renames only a whole file).
std::string save_checkpoint(Comm& comm, Gpt& model, const GptLabSettings& s) {
  const SafeTensors ckpt = gpt_checkpoint(model, {{"step", std::to_string(s.steps)}, {"lab", "gpt"}});
  std::string error;
  if (comm.rank() == 0) {
    try {
      write_safetensors(s.save, ckpt);
    } catch (const Error& e) { error = e.what(); }
  }
  float failed = error.empty() ? 0.0f : 1.0f;
  comm.all_reduce(&failed, &failed, 1, DType::f32, ReduceOp::sum);
  if (failed > 0 && error.empty()) error = "rank 0 could not write " + s.save;  // (the other ranks' words)
  return failed > 0 ? "--save: " + error : "";
}

// Every element of the full model once (replicated tensors are on every rank).
std::size_t full_param_count(const Gpt& model) {
  std::size_t n = 0;
  for (const GptTensor& t : model.tensors()) {
    std::size_t e = 1;
    for (std::int64_t d : t.full_shape) e *= std::size_t(d);
    n += e;
  }
  return n;
}

}  // namespace

Report run_gpt_lab(Comm& comm, const LabConfig& cfg) {
  kernels::use_one_blas_thread();  // OpenBLAS's own threads spin against the ranks (10× slower on a busy 2-core box)
  const TextCorpus corpus = TextCorpus::shipped(Vocab::chars);
  const GptLabSettings s = gpt_lab_settings(cfg, comm.size(), corpus);
  MemoryTracker mem(comm.global_rank(), comm.trace());
  Gpt model(s.model, ex::TpGroup{comm, ex::TpMode::plain}, mem, s.seed, rank_device(cfg.device, comm), {}, s.precision);
  if (!s.load.empty()) load_gpt_checkpoint(model, read_safetensors(s.load));  // every rank: its own slice
  model.set_recompute(s.recompute);

  GptTrainingLog log;
  publish_memory_formula(comm, double(model.num_params()),
                         gpt_activation_bytes(model.config(), model.tp_size(), ex::TpMode::plain, {}, s.recompute),
                         "16 B/param x the rank's parameters + activations (gpt_activation_bytes)");
  publish_activation_formula(comm, gpt_activation_parts(s.model, comm.size(), ex::TpMode::plain, {}, s.recompute),
                             s.recompute, 1,
                             korthikanti_layer_bytes(s.model, comm.size(), ex::TpMode::plain, s.recompute));
  if (s.recompute != theory::Recompute::none)
    log.activation.gradient_bits_differing = compare_with_twin(comm, cfg, model, corpus, s);
  {
    Trace* tr = comm.trace();
    const ScopedSpan phase(tr, comm.global_rank(), EventKind::phase,
                           tr ? tr->label("training", {.part = RunPart::timed}) : std::uint16_t(0));
    train(comm, cfg, model, mem, corpus, s, log);
  }
  record_memory(mem, model, log);
  const double bits = log.activation.gradient_bits_differing;
  log.activation = gpt_activation_figures(comm, model);
  log.activation.gradient_bits_differing = bits;
  const std::string save_error = s.save.empty() ? "" : save_checkpoint(comm, model, s);
  log.prompt = "The ring all-reduce ";
  log.sample = sample_text(model, comm, corpus, log.prompt, 80, 0.8f, s.seed);

  Report rep = start_report(comm, cfg, "gpt");
  describe_gpt_setup(rep, s, corpus, full_param_count(model));
  add_gpt_rows(rep, s, log);
  add_gpt_memory_rows(rep, s, log);
  if (!save_error.empty()) {  // the run's figures above still print; the exit code says it failed
    rep.ok = false;
    rep.failures.push_back(save_error);
  }
  return rep;
}

const OptionTable<GptLabSettings>& gpt_option_table() {
  static const OptionTable<GptLabSettings> table = [] {
    using S = GptLabSettings;
    OptionTable<S> t;
    t.integer(
         "layers", [](S& s) -> int& { return s.model.layers; }, 2, 1, 64, "transformer layers L")
        .integer(
            "hidden", [](S& s) -> int& { return s.model.hidden; }, 64, 1, 4096, "hidden size h")
        .integer(
            "heads", [](S& s) -> int& { return s.model.heads; }, 4, 1, 256, "attention heads (divisible by --ranks)")
        .integer(
            "seq", [](S& s) -> int& { return s.model.seq; }, 64, 2, 4096, "characters per sequence s")
        .integer(
            "batch", [](S& s) -> int& { return s.model.batch; }, 8, 1, 4096, "sequences per step b")
        .integer("steps", &S::steps, 300, 0, 100000, "AdamW steps (0: evaluate and sample only)")
        .number(
            "lr", [](S& s) -> float& { return s.adamw.lr; }, 3e-3f, 0, 1, "AdamW learning rate (constant)")
        .integer("eval-every", &S::eval_every, 25, 1, 1 << 20, "steps between held-out evaluations")
        .integer("seed", &S::seed, 1u, 0, 1 << 30, "initialization, batches and sampling")
        .path("save", &S::save, "write the trained model here (safetensors, docs/checkpoints.md)", /*writes=*/true)
        .path("load", &S::load, "start from this checkpoint (names and shapes must fit)")
        .choice("precision", &S::precision, DType::f32, kPrecisionNames,
                "fp32, or mixed precision: bf16/fp16 weights and gradients, fp32 master, m, v")
        .choice("recompute", &S::recompute, theory::Recompute::none, kRecomputeNames, kRecomputeHelp);
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

LabInfo gpt_lab_info() {
  return {
      "gpt",
      "train a tiny GPT on dtlab's own docs (tensor parallel over --ranks): loss curves, checkpoints, a sample",
      {RunOption::device, RunOption::faults, RunOption::step},
      gpt_option_table().specs(),
      {},
      run_gpt_lab,
      nullptr,
      StepUnit::collectives,
      /*overlaps_compute=*/false,
      {ViewKind::report, ViewKind::timeline, ViewKind::memory, kActivationView, ViewKind::what_if},
      {{"steps", "60"}},
      gpt_option_table().settings_text(),
      {},
      {},
      // small_run: 300 steps of 16 tokens, the late loss a mean of 20 steps; its check (log V - 1
      // nat) passed by 0.5 nats (40 steps passed or failed as the README it trains on changed);
      // tiny steps: the option fuzz draws --steps 100000 on it (64 tokens took 60 s in CI)
      {{"ranks", "1"},
       {"layers", "1"},
       {"hidden", "16"},
       {"seq", "8"},
       {"batch", "2"},
       {"steps", "300"},
       {"eval-every", "10"}},
  };
}

}  // namespace dtl
