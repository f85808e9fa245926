#include "labs/train/checkpoint_run.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/memory/device_ops.h"
#include "core/trace/trace.h"

namespace dtl {

TrainPosition train_position(const std::string& lab, int done, const DataOrder& data) {
  return {done, std::uint64_t(done) * data.samples_per_step, data.data_seed, lab};
}

ResumeRules mlp_resume_rules(int batch, int train_steps) {
  return {{"zero", "ddp", "pipeline", "grid"},  // (the grid's --mlp-form stack: the same stack and tensors)
          {std::uint64_t(batch), kMlpDataSeed, "--batch " + std::to_string(batch)},
          train_steps,
          "1 + --repeat × --steps"};
}

namespace {
std::string joined(const std::vector<std::string>& labs) {
  std::string out;
  for (std::size_t i = 0; i < labs.size(); ++i) out += (i == 0 ? "" : i + 1 == labs.size() ? " and " : ", ") + labs[i];
  return out;
}
}  // namespace

Manifest resume_manifest(const std::string& resume, const ResumeRules& rules) {
  Manifest m = read_manifest(resolve_checkpoint(resume));
  const TrainPosition& pos = m.position;
  if (std::find(rules.labs.begin(), rules.labs.end(), pos.lab) == rules.labs.end())
    throw UsageError("--resume " + m.dir + " was saved by the " + pos.lab + " lab; this run reads the " +
                     joined(rules.labs) + " labs' checkpoints only (the same model and tensors)");
  const DataOrder& d = rules.data;
  if (pos.rng_state != d.data_seed)
    throw UsageError("--resume " + m.dir + " trained on another data order (seed " + std::to_string(pos.rng_state) +
                     ", this run's " + std::to_string(d.data_seed) + "): it was saved by another model or task");
  if (pos.data_position != std::uint64_t(pos.step) * d.samples_per_step)
    throw UsageError("--resume " + m.dir + " consumed " + std::to_string(pos.data_position) + " samples in " +
                     std::to_string(pos.step) + " steps: it was saved with another --batch than this run's " + d.batch);
  if (pos.step >= rules.train_steps)
    throw UsageError("--resume " + m.dir + " is at step " + std::to_string(pos.step) + ", this run trains " +
                     std::to_string(rules.train_steps) + " (" + rules.steps + "): nothing is left to train");
  return m;
}

namespace {

// The viewer's marks (core/trace/vocab.h's checkpoint parts): spans on the rank's main stream,
// their step the checkpoint's.
std::uint16_t checkpoint_label(Comm& comm, const char* words, RunPart part) {
  return comm.trace() ? comm.trace()->label(words, Role{.part = part}) : 0;
}

// This rank's file's write, when it happened (beside the next step when asynchronous).
void record_write(Comm& comm, const ShardedSave& save) {
  Trace* trace = comm.trace();
  if (!trace) return;
  trace->record(Event{.begin_ns = save.write_begin_ns(),
                      .end_ns = save.write_end_ns(),
                      .rank = comm.global_rank(),
                      .step = save.step(),
                      .label = checkpoint_label(comm, "checkpoint write (this rank's file)", RunPart::checkpoint_write),
                      .kind = EventKind::phase});
}

}  // namespace

int resume_run(Comm& comm, const std::string& resume, const ResumeRules& rules, CheckpointStats& stats,
               const std::function<std::size_t(const Manifest&)>& load) {
  if (resume.empty()) return 0;
  const Manifest m = resume_manifest(resume, rules);
  const ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::phase,
                        checkpoint_label(comm, "resume: read the checkpoint", RunPart::resume), m.position.step);
  verify_checkpoint(comm, m);
  double read = double(load(m));
  comm.all_reduce(&read, &read, 1, DType::f64, ReduceOp::max);
  stats.resumed_from = m.position.step;
  stats.resume_bytes_read = read;
  return m.position.step;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The save's times, slowest rank, and (rank 0) its files' bytes.
void record_save(Comm& comm, CheckpointStats& stats, const std::string& dir, double blocked, double write) {
  double times[2] = {blocked, write};
  comm.all_reduce(times, times, 2, DType::f64, ReduceOp::max);
  stats.blocked_seconds.push_back(times[0]);
  stats.write_seconds.push_back(times[1]);
  if (comm.rank() != 0) return;
  std::uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) bytes += e.file_size();
  stats.save_bytes = double(bytes);
}

}  // namespace

void finish_checkpoints(Comm& comm, CheckpointStats& stats) {
  if (!stats.pending) return;
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<ShardedSave> save = std::move(stats.pending);
  const ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::phase,
                        checkpoint_label(comm, "checkpoint save: finish (asynchronous)", RunPart::checkpoint),
                        save->step());
  try {
    const std::string dir = save->finish();
    record_write(comm, *save);
    record_save(comm, stats, dir, stats.pending_blocked + seconds_since(start), save->write_seconds());
  } catch (const CheckpointNotSaved& e) { stats.failures.push_back(e.what()); }
}

void checkpoint_if_due(Comm& comm, const CheckpointPlan& plan, const TrainPosition& pos, CheckpointStats& stats,
                       const std::function<StagedPieces()>& stage) {
  finish_checkpoints(comm, stats);
  if (plan.every < 1 || pos.step % plan.every != 0) return;
  const auto start = std::chrono::steady_clock::now();
  const ScopedSpan span(
      comm.trace(), comm.global_rank(), EventKind::phase,
      checkpoint_label(comm,
                       plan.async ? "checkpoint save: staging copy (asynchronous)" : "checkpoint save (synchronous)",
                       RunPart::checkpoint),
      pos.step);
  StagedPieces staged = stage();
  double staging = staged.bytes;
  comm.all_reduce(&staging, &staging, 1, DType::f64, ReduceOp::max);
  stats.staging_bytes = std::max(stats.staging_bytes, staging);
  stats.async = plan.async;
  // A save that cannot be written (a full disk) is reported, not the end of the run: the
  // training goes on and its report prints, saying which checkpoint is missing and why.
  try {
    auto save = std::make_shared<ShardedSave>(comm, plan.dir, std::move(staged.pieces), pos, plan.async, staged.holder);
    if (plan.async) {
      stats.pending = std::move(save);
      stats.pending_blocked = seconds_since(start);
      return;
    }
    const std::string dir = save->finish();
    record_write(comm, *save);
    record_save(comm, stats, dir, seconds_since(start), save->write_seconds());
  } catch (const CheckpointNotSaved& e) { stats.failures.push_back(e.what()); }
}

void add_checkpoint_report(Report& rep, const std::string& id, const CheckpointStats& stats) {
  if (!stats.failures.empty()) {  // the figures still print; the exit code says it failed
    rep.ok = false;
    rep.failures.push_back("--checkpoint-dir: " + stats.failures.front());
    if (stats.failures.size() > 1)
      rep.failures.push_back("--checkpoint-dir: " + std::to_string(stats.failures.size() - 1) +
                             " later checkpoints not saved either");
  }
  if (stats.resumed_from >= 0) {
    rep.add(id + "resumed_from", "resumed from checkpoint step", stats.resumed_from, "");
    rep.add(id + "resume_bytes_read", "checkpoint bytes read (busiest rank)", stats.resume_bytes_read / 1e6, "MB")
        .source = "its byte ranges only";
  }
  if (stats.blocked_seconds.empty()) return;
  rep.add(id + "checkpoint_saves", "checkpoints saved", double(stats.blocked_seconds.size()), "");
  rep.add(id + "checkpoint_bytes", "one checkpoint on disk (all ranks' files + manifest)", stats.save_bytes / 1e6,
          "MB");
  rep.add(id + "checkpoint_staging", "host staging copy (largest rank)", stats.staging_bytes / 1e6, "MB");
  rep.add(id + "checkpoint_blocked",
          stats.async ? "training stopped per save (staging + finish)" : "training stopped per save (all of it)", 0,
          "s")
      .over(repeated(stats.blocked_seconds));
  rep.add(id + "checkpoint_write", stats.async ? "its file's write, beside the next step" : "of which its file's write",
          0, "s")
      .over(repeated(stats.write_seconds));
}

void require_mlp_tensors(const Manifest& m, DType precision, std::size_t n, bool has_master) {
  const std::vector<std::int64_t> shape = {std::int64_t(n)};
  require_tensor(m, "params", precision, shape);
  for (const char* t : {"adam.m", "adam.v"}) require_tensor(m, t, DType::f32, shape);
  if (has_master) require_tensor(m, "master", DType::f32, shape);
  if (!has_master && m.tensors.count("master"))
    throw UsageError("checkpoint " + m.dir + " has an fp32 master; this run keeps none: resume with --master keep");
}

StagedPieces stage_mlp_pieces(const std::vector<OwnedRange>& owned, DType precision, std::size_t n) {
  struct Held {  // host copies: what the save writes from
    std::vector<std::byte> params;
    OptimizerState state;
  };
  const std::size_t es = dtype_size(precision);
  const std::vector<std::int64_t> shape = {std::int64_t(n)};
  auto held = std::make_shared<std::vector<Held>>(owned.size());
  StagedPieces out;
  for (std::size_t k = 0; k < owned.size(); ++k) {
    const OwnedRange& o = owned[k];
    const Range r = o.range;
    Held& h = (*held)[k];
    h.params.resize(r.size() * es);
    if (r.size()) copy_bytes(h.params.data(), o.params, r.size() * es);
    h.state = o.opt->save_state();
    out.pieces.push_back({"params", precision, shape, r.begin, r.end, h.params.data()});
    out.pieces.push_back({"adam.m", DType::f32, shape, r.begin, r.end, h.state.m.data() + o.opt_offset});
    out.pieces.push_back({"adam.v", DType::f32, shape, r.begin, r.end, h.state.v.data() + o.opt_offset});
    if (!h.state.master.empty())
      out.pieces.push_back({"master", DType::f32, shape, r.begin, r.end, h.state.master.data() + o.opt_offset});
    out.bytes += double(h.params.size()) + 4.0 * double(h.state.m.size() + h.state.v.size() + h.state.master.size());
  }
  out.holder = held;
  return out;
}

std::size_t load_params_range(const Manifest& m, Range range, void* params, DType precision) {
  std::vector<std::byte> host(range.size() * dtype_size(precision));
  const std::size_t read = read_tensor_range(m, "params", range.begin, range.end, host.data());
  if (!host.empty()) copy_bytes(params, host.data(), host.size());
  return read;
}

std::size_t load_optimizer_range(const Manifest& m, Range range, Optimizer& opt, bool has_master) {
  const std::size_t n = range.size();
  OptimizerState st;
  st.steps = m.position.step;  // every step applied (bf16 and fp32 skip none; fp16 is refused)
  st.m.resize(n), st.v.resize(n);
  std::size_t read = read_tensor_range(m, "adam.m", range.begin, range.end, st.m.data());
  read += read_tensor_range(m, "adam.v", range.begin, range.end, st.v.data());
  if (has_master) {
    st.master.resize(n);
    read += read_tensor_range(m, "master", range.begin, range.end, st.master.data());
  }
  opt.load_state(st);
  return read;
}

std::size_t load_mlp_range(const Manifest& m, Range range, void* params, DType precision, Optimizer& opt,
                           bool has_master) {
  return load_params_range(m, range, params, precision) + load_optimizer_range(m, range, opt, has_master);
}

}  // namespace dtl
