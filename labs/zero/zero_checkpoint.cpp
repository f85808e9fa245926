// A ZeRO rank's part of a sharded checkpoint (labs/train/checkpoint_sharded.h): what it saves
// and what it reads back, on any stage and world size (the resharding is index math on the
// model's flat buffer: the checkpoint is laid out by global element, not by rank).
#include "core/error.h"
#include "labs/measure.h"
#include "labs/zero/zero_rank.h"

namespace dtl {

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

StagedPieces ZeroRank::stage_checkpoint() {
  std::vector<OwnedRange> mine;
  for (const Owned& o : owned()) mine.push_back({o.range, o.params, o.opt, o.opt_offset});
  return stage_mlp_pieces(mine, s_.precision, units_.numel);
}

std::size_t ZeroRank::load_checkpoint(const Manifest& m) {
  const bool has_master = s_.precision != DType::f32 && s_.master == MasterWeights::keep;
  require_mlp_tensors(m, s_.precision, units_.numel, has_master);
  std::size_t read = 0;
  // The parameters this stage holds: stage 0 the model's, stages 1, 2 every unit into its padded
  // place, stage 3 only its chunks (below, with their optimizers).
  if (!shards_optimizer(stage_))
    read += load_params_range(m, {0, units_.numel}, model_.param_data(), s_.precision);
  else if (!shards_params(stage_))
    for (const ZeroUnit& u : units_.units)
      read += load_params_range(m, u.range, at(full_params_.data(), u.padded_begin), s_.precision);
  for (const Owned& o : owned()) {
    if (shards_params(stage_)) read += load_params_range(m, o.range, o.params, s_.precision);
    // stage 0's one optimizer spans the whole model; the others, exactly their range
    const Range r = shards_optimizer(stage_) ? o.range : Range{0, units_.numel};
    read += load_optimizer_range(m, r, *o.opt, has_master);
  }
  return read;
}

int zero_resume(Comm& comm, const ZeroSettings& s, ZeroRank& rank, ZeroMeasurement& m) {
  return resume_run(comm, s.resume, mlp_resume_rules(s.batch, s.train_steps()), m.checkpoints,
                    [&](const Manifest& man) { return rank.load_checkpoint(man); });
}

void zero_checkpoint_after(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, ZeroRank& rank, int done,
                           ZeroMeasurement& m) {
  const TrainPosition pos{done, std::uint64_t(done) * std::uint64_t(s.batch), kMlpDataSeed, "zero"};
  checkpoint_if_due(comm, checkpoint_plan(s), pos, m.checkpoints, [&] {
    report_progress(comm, cfg, "checkpoint of step " + std::to_string(done));
    return rank.stage_checkpoint();
  });
  if (done == s.train_steps()) finish_checkpoints(comm, m.checkpoints);  // the last asynchronous save
}

}  // namespace dtl
