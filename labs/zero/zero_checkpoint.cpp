// A ZeRO rank's part of a sharded checkpoint (labs/train/checkpoint_sharded.h): what it saves
// and what it reads back, on any stage and world size (the resharding is index math on the
// model's flat buffer: the checkpoint is laid out by global element, not by rank).
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/measure.h"
#include "labs/zero/zero_rank.h"

namespace dtl {

namespace {

std::vector<std::byte> device_to_host(const void* src, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  if (bytes) copy_bytes(out.data(), src, bytes);
  return out;
}

std::vector<float> slice(const std::vector<float>& v, std::size_t at, std::size_t n) {
  return {v.begin() + std::ptrdiff_t(at), v.begin() + std::ptrdiff_t(at + n)};
}

constexpr std::uint64_t kDataSeed = 7;  // make_teacher_data's seed in run_zero_lab: the data's order

}  // namespace

std::vector<ZeroRank::Owned> ZeroRank::owned() {
  std::vector<Owned> out;
  if (!shards_optimizer(stage_)) {  // DDP: every rank holds everything; each saves its 1/N
    const Range r = shard_of(units_.numel, comm_.rank(), comm_.size()).range;
    out.push_back({r, opts_[0].get(), r.begin, at(model_.param_data(), r.begin)});
    return out;
  }
  for (std::size_t i = 0; i < units_.units.size(); ++i) {
    if (!opts_[i]) continue;
    const ZeroUnit& u = units_.units[i];
    const ex::ShardStep st =
        ex::shard_step({unit_params(u), s_.precision}, shards_params(stage_), unit_shard_grads(u), u.own);
    const std::size_t begin = u.range.begin + u.own.begin;
    out.push_back({{begin, begin + st.count}, opts_[i].get(), 0, st.params});
  }
  return out;
}

std::string ZeroRank::save_checkpoint(const std::string& root, const TrainPosition& pos, const SaveFaults& faults) {
  struct Held {  // host copies, alive until the save returns
    std::vector<std::byte> params;
    OptimizerState state;
  };
  const std::vector<Owned> mine = owned();
  std::vector<Held> held(mine.size());
  std::vector<PieceView> pieces;
  const std::vector<std::int64_t> shape = {std::int64_t(units_.numel)};
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const Owned& o = mine[k];
    held[k].params = device_to_host(o.params, o.range.size() * es_);
    held[k].state = o.opt->save_state();
    OptimizerState& st = held[k].state;
    if (o.opt_offset || st.m.size() != o.range.size()) {  // stage 0: its 1/N of the whole optimizer
      st.m = slice(st.m, o.opt_offset, o.range.size());
      st.v = slice(st.v, o.opt_offset, o.range.size());
      if (!st.master.empty()) st.master = slice(st.master, o.opt_offset, o.range.size());
    }
    pieces.push_back({"params", s_.precision, shape, o.range.begin, o.range.end, held[k].params.data()});
    if (!st.master.empty())
      pieces.push_back({"master", DType::f32, shape, o.range.begin, o.range.end, st.master.data()});
    pieces.push_back({"adam.m", DType::f32, shape, o.range.begin, o.range.end, st.m.data()});
    pieces.push_back({"adam.v", DType::f32, shape, o.range.begin, o.range.end, st.v.data()});
  }
  return save_sharded_checkpoint(comm_, root, pieces, pos, faults);
}

std::size_t ZeroRank::load_checkpoint(const Manifest& m) {
  const std::vector<std::int64_t> shape = {std::int64_t(units_.numel)};
  const bool has_master = s_.precision != DType::f32 && s_.master == MasterWeights::keep;
  require_tensor(m, "params", s_.precision, shape);
  for (const char* t : {"adam.m", "adam.v"}) require_tensor(m, t, DType::f32, shape);
  if (has_master) require_tensor(m, "master", DType::f32, shape);
  if (!has_master && m.tensors.count("master"))
    throw UsageError("checkpoint " + m.dir + " has an fp32 master; this run keeps none: resume with --master keep");
  std::size_t read = 0;
  std::vector<std::byte> host;
  auto read_params = [&](std::size_t begin, std::size_t end, void* dst) {  // into the device buffer
    host.resize((end - begin) * es_);
    read += read_tensor_range(m, "params", begin, end, host.data());
    if (!host.empty()) copy_bytes(dst, host.data(), host.size());
  };
  if (!shards_optimizer(stage_))
    read_params(0, units_.numel, model_.param_data());
  else
    for (const ZeroUnit& u : units_.units)  // stages 1, 2: every parameter; stage 3: its chunks
      if (!shards_params(stage_)) read_params(u.range.begin, u.range.end, at(full_params_.data(), u.padded_begin));
  for (const Owned& o : owned()) {
    // stage 0's one optimizer spans the whole model; the others, exactly their range
    const Range r = shards_optimizer(stage_) ? o.range : Range{0, units_.numel};
    if (shards_params(stage_)) read_params(r.begin, r.end, o.params);
    OptimizerState st;
    st.steps = m.position.step;
    st.m.resize(r.size()), st.v.resize(r.size());
    read += read_tensor_range(m, "adam.m", r.begin, r.end, st.m.data());
    read += read_tensor_range(m, "adam.v", r.begin, r.end, st.v.data());
    if (has_master)
      st.master.resize(r.size()), read += read_tensor_range(m, "master", r.begin, r.end, st.master.data());
    o.opt->load_state(st);
  }
  return read;
}

void add_zero_checkpoint_rows(OptionTable<ZeroSettings>& t) {
  t.integer("checkpoint-every", &ZeroSettings::checkpoint_every, 0, 0, 1 << 30,
            "save a sharded checkpoint after every N steps (with --checkpoint-dir; 0: never)")
      .path("checkpoint-dir", &ZeroSettings::checkpoint_dir,
            "folder of the sharded checkpoints (step-NNNNNN/, one file per rank and a manifest)", true)
      .path("resume", &ZeroSettings::resume,
            "continue from a checkpoint folder (or the newest complete one under a --checkpoint-dir), on any ranks");
}

void require_zero_checkpoint_options(const LabOptions& o, const ZeroSettings& s, std::size_t stages) {
  const OptionTable<ZeroSettings>& t = zero_option_table();
  const bool every = t.given(o, &ZeroSettings::checkpoint_every), dir = t.given(o, &ZeroSettings::checkpoint_dir);
  if (every != dir)
    throw UsageError(every ? "--checkpoint-every N saves into --checkpoint-dir D: give both"
                           : "--checkpoint-dir D is where --checkpoint-every N saves: give both");
  if (!every && s.resume.empty()) return;
  if (stages != 1)
    throw UsageError(
        "checkpoints save and resume one run of one stage: give --stage 0, 1, 2 or 3 (not all, no --sweep)");
  if (s.precision == DType::f16)
    throw UsageError("checkpoints do not keep fp16's dynamic loss scale yet: use --precision bf16 or fp32");
  if (every && s.checkpoint_every < 1) throw UsageError("--checkpoint-every must be at least 1");
}

int zero_resume(Comm& comm, const ZeroSettings& s, ZeroRank& rank, ZeroMeasurement& m) {
  if (s.resume.empty()) return 0;
  const Manifest man = read_manifest(resolve_checkpoint(s.resume));
  const TrainPosition& pos = man.position;
  if (pos.lab != "zero") throw UsageError("--resume " + man.dir + " was saved by the " + pos.lab + " lab, not zero");
  if (pos.data_position != std::uint64_t(pos.step) * std::uint64_t(s.batch) || pos.rng_state != kDataSeed)
    throw UsageError("--resume " + man.dir + " consumed " + std::to_string(pos.data_position) + " samples in " +
                     std::to_string(pos.step) + " steps: it was saved with another --batch than " +
                     std::to_string(s.batch));
  if (pos.step >= s.train_steps())
    throw UsageError("--resume " + man.dir + " is at step " + std::to_string(pos.step) + ", this run trains " +
                     std::to_string(s.train_steps()) + " (1 + --repeat × --steps): nothing is left to train");
  verify_checkpoint(comm, man);
  double read = double(rank.load_checkpoint(man));
  comm.all_reduce(&read, &read, 1, DType::f64, ReduceOp::max);
  m.resumed_from = pos.step;
  m.resume_bytes_read = read;
  return pos.step;
}

void zero_checkpoint_after(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, ZeroRank& rank, int done,
                           ZeroMeasurement& m) {
  if (s.checkpoint_every < 1 || done % s.checkpoint_every != 0) return;
  report_progress(comm, cfg, "checkpoint of step " + std::to_string(done));
  const auto start = std::chrono::steady_clock::now();
  const std::string dir =
      rank.save_checkpoint(s.checkpoint_dir, {done, std::uint64_t(done) * std::uint64_t(s.batch), kDataSeed, "zero"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  comm.all_reduce(&seconds, &seconds, 1, DType::f64, ReduceOp::max);
  m.saves += 1;
  m.save_seconds.push_back(seconds);
  if (comm.rank() == 0) {
    std::uintmax_t bytes = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) bytes += e.file_size();
    m.save_bytes = double(bytes);
  }
}

void add_zero_checkpoint_report(Report& rep, const std::string& id, const ZeroMeasurement& m) {
  if (m.resumed_from >= 0) {
    rep.add(id + "resumed_from", "resumed from checkpoint step", m.resumed_from, "");
    rep.add(id + "resume_bytes_read", "checkpoint bytes read (busiest rank)", m.resume_bytes_read / 1e6, "MB").source =
        "its byte ranges only";
  }
  if (m.saves == 0) return;
  rep.add(id + "checkpoint_saves", "checkpoints saved", m.saves, "");
  rep.add(id + "checkpoint_bytes", "one checkpoint on disk (all ranks' files + manifest)", m.save_bytes / 1e6, "MB");
  rep.add(id + "checkpoint_time", "one synchronous save (slowest rank)", 0, "s").over(repeated(m.save_seconds));
}

}  // namespace dtl
