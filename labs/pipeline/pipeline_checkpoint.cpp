// A pipeline stage's part of a sharded checkpoint (labs/train/checkpoint_run.h): its chunks'
// layers, each a contiguous range of the whole MLP's flat buffer.
#include "labs/pipeline/pipeline_stage.h"

namespace dtl {

Range PipelineStage::global_range(const Chunk& c) const {
  // Layers 0 .. first−1 come before the chunk's (parameter_count's default span is the whole model).
  const std::size_t begin = c.span.first == 0 ? 0 : parameter_count(s_.shape, {0, c.span.first - 1});
  return {begin, begin + c.model->num_params()};
}

StagedPieces PipelineStage::stage_checkpoint() {
  std::vector<OwnedRange> owned;
  for (const Chunk& c : chunks_) owned.push_back({global_range(c), c.model->param_data(), c.opt.get(), 0});
  return stage_mlp_pieces(owned, DType::f32, parameter_count(s_.shape));
}

std::size_t PipelineStage::load_checkpoint(const Manifest& m) {
  require_mlp_tensors(m, DType::f32, parameter_count(s_.shape), false);
  std::size_t read = 0;
  for (Chunk& c : chunks_) read += load_mlp_range(m, global_range(c), c.model->param_data(), DType::f32, *c.opt, false);
  return read;
}

// The step to start from: 0, or --resume's, each stage reading its layers' ranges only.
int resume_stage(Comm& comm, const PipelineSettings& s, PipelineStage& stage, CheckpointStats& stats) {
  return resume_run(comm, s.resume, mlp_resume_rules(s.batch, s.train_steps()), stats,
                    [&](const Manifest& m) { return stage.load_checkpoint(m); });
}

}  // namespace dtl
