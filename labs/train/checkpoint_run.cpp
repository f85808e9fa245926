#include "labs/train/checkpoint_run.h"

#include <chrono>
#include <filesystem>

#include "core/memory/device_ops.h"
#include "labs/train/param_layout.h"

namespace dtl {

Manifest resume_manifest(const std::string& resume, int batch, int train_steps) {
  const Manifest m = read_manifest(resolve_checkpoint(resume));
  const TrainPosition& pos = m.position;
  if (pos.lab != "zero" && pos.lab != "ddp")
    throw UsageError("--resume " + m.dir + " was saved by the " + pos.lab + " lab; the ddp and zero labs read theirs");
  if (pos.data_position != std::uint64_t(pos.step) * std::uint64_t(batch) || pos.rng_state != kMlpDataSeed)
    throw UsageError("--resume " + m.dir + " consumed " + std::to_string(pos.data_position) + " samples in " +
                     std::to_string(pos.step) + " steps: it was saved with another --batch than " +
                     std::to_string(batch));
  if (pos.step >= train_steps)
    throw UsageError("--resume " + m.dir + " is at step " + std::to_string(pos.step) + ", this run trains " +
                     std::to_string(train_steps) + " (1 + --repeat × --steps): nothing is left to train");
  return m;
}

void checkpoint_if_due(Comm& comm, int every, int done, CheckpointStats& stats,
                       const std::function<std::string()>& save) {
  if (every < 1 || done % every != 0) return;
  const auto start = std::chrono::steady_clock::now();
  const std::string dir = save();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  comm.all_reduce(&seconds, &seconds, 1, DType::f64, ReduceOp::max);
  stats.save_seconds.push_back(seconds);
  if (comm.rank() != 0) return;
  std::uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) bytes += e.file_size();
  stats.save_bytes = double(bytes);
}

void add_checkpoint_report(Report& rep, const std::string& id, const CheckpointStats& stats) {
  if (stats.resumed_from >= 0) {
    rep.add(id + "resumed_from", "resumed from checkpoint step", stats.resumed_from, "");
    rep.add(id + "resume_bytes_read", "checkpoint bytes read (busiest rank)", stats.resume_bytes_read / 1e6, "MB")
        .source = "its byte ranges only";
  }
  if (stats.save_seconds.empty()) return;
  rep.add(id + "checkpoint_saves", "checkpoints saved", double(stats.save_seconds.size()), "");
  rep.add(id + "checkpoint_bytes", "one checkpoint on disk (all ranks' files + manifest)", stats.save_bytes / 1e6,
          "MB");
  rep.add(id + "checkpoint_time", "one synchronous save (slowest rank)", 0, "s").over(repeated(stats.save_seconds));
}

void require_mlp_tensors(const Manifest& m, DType precision, std::size_t n, bool has_master) {
  const std::vector<std::int64_t> shape = {std::int64_t(n)};
  require_tensor(m, "params", precision, shape);
  for (const char* t : {"adam.m", "adam.v"}) require_tensor(m, t, DType::f32, shape);
  if (has_master) require_tensor(m, "master", DType::f32, shape);
  if (!has_master && m.tensors.count("master"))
    throw UsageError("checkpoint " + m.dir + " has an fp32 master; this run keeps none: resume with --master keep");
}

std::string save_replicated_checkpoint(Comm& comm, const std::string& root, const void* params, DType precision,
                                       std::size_t n, const Optimizer& opt, const TrainPosition& pos) {
  const Range r = shard_of(n, comm.rank(), comm.size()).range;
  const std::size_t es = dtype_size(precision);
  std::vector<std::byte> mine(r.size() * es);
  if (!mine.empty()) copy_bytes(mine.data(), static_cast<const std::byte*>(params) + r.begin * es, mine.size());
  const OptimizerState st = opt.save_state();
  const std::vector<std::int64_t> shape = {std::int64_t(n)};
  std::vector<PieceView> pieces = {{"params", precision, shape, r.begin, r.end, mine.data()},
                                   {"adam.m", DType::f32, shape, r.begin, r.end, st.m.data() + r.begin},
                                   {"adam.v", DType::f32, shape, r.begin, r.end, st.v.data() + r.begin}};
  if (!st.master.empty()) pieces.push_back({"master", DType::f32, shape, r.begin, r.end, st.master.data() + r.begin});
  return save_sharded_checkpoint(comm, root, pieces, pos);
}

std::size_t load_replicated_checkpoint(const Manifest& m, void* params, DType precision, std::size_t n, Optimizer& opt,
                                       bool has_master) {
  require_mlp_tensors(m, precision, n, has_master);
  std::vector<std::byte> host(n * dtype_size(precision));
  std::size_t read = read_tensor_range(m, "params", 0, n, host.data());
  if (!host.empty()) copy_bytes(params, host.data(), host.size());
  OptimizerState st;
  st.steps = m.position.step;
  st.m.resize(n), st.v.resize(n);
  read += read_tensor_range(m, "adam.m", 0, n, st.m.data());
  read += read_tensor_range(m, "adam.v", 0, n, st.v.data());
  if (has_master) st.master.resize(n), read += read_tensor_range(m, "master", 0, n, st.master.data());
  opt.load_state(st);
  return read;
}

}  // namespace dtl
