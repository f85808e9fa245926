#include "labs/train/checkpoint_run.h"

#include <chrono>
#include <filesystem>

#include "core/memory/device_ops.h"

namespace dtl {

Manifest resume_manifest(const std::string& resume, int batch, int train_steps) {
  const Manifest m = read_manifest(resolve_checkpoint(resume));
  const TrainPosition& pos = m.position;
  if (pos.lab != "zero" && pos.lab != "ddp" && pos.lab != "pipeline")
    throw UsageError("--resume " + m.dir + " was saved by the " + pos.lab +
                     " lab; the MLP labs (ddp, zero, pipeline) read each other's only");
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

std::string save_mlp_checkpoint(Comm& comm, const std::string& root, const std::vector<OwnedRange>& owned,
                                DType precision, std::size_t n, const TrainPosition& pos) {
  struct Held {  // host copies, alive until the save returns
    std::vector<std::byte> params;
    OptimizerState state;
  };
  const std::size_t es = dtype_size(precision);
  const std::vector<std::int64_t> shape = {std::int64_t(n)};
  std::vector<Held> held(owned.size());
  std::vector<PieceView> pieces;
  for (std::size_t k = 0; k < owned.size(); ++k) {
    const OwnedRange& o = owned[k];
    const Range r = o.range;
    held[k].params.resize(r.size() * es);
    if (r.size()) copy_bytes(held[k].params.data(), o.params, r.size() * es);
    held[k].state = o.opt->save_state();
    const OptimizerState& st = held[k].state;
    pieces.push_back({"params", precision, shape, r.begin, r.end, held[k].params.data()});
    pieces.push_back({"adam.m", DType::f32, shape, r.begin, r.end, st.m.data() + o.opt_offset});
    pieces.push_back({"adam.v", DType::f32, shape, r.begin, r.end, st.v.data() + o.opt_offset});
    if (!st.master.empty())
      pieces.push_back({"master", DType::f32, shape, r.begin, r.end, st.master.data() + o.opt_offset});
  }
  return save_sharded_checkpoint(comm, root, pieces, pos);
}

std::size_t load_mlp_range(const Manifest& m, Range range, void* params, DType precision, Optimizer& opt,
                           bool has_master) {
  const std::size_t n = range.size();
  std::vector<std::byte> host(n * dtype_size(precision));
  std::size_t read = read_tensor_range(m, "params", range.begin, range.end, host.data());
  if (!host.empty()) copy_bytes(params, host.data(), host.size());
  OptimizerState st;
  st.steps = m.position.step;
  st.m.resize(n), st.v.resize(n);
  read += read_tensor_range(m, "adam.m", range.begin, range.end, st.m.data());
  read += read_tensor_range(m, "adam.v", range.begin, range.end, st.v.data());
  if (has_master) {
    st.master.resize(n);
    read += read_tensor_range(m, "master", range.begin, range.end, st.master.data());
  }
  opt.load_state(st);
  return read;
}

}  // namespace dtl
