// The grid lab's MLP stage (grid_stage.h): blocks first..last of the tensor-parallel MLP
// (labs/tensor_parallel/tp_mlp.h) on its regression task — or, --mlp-form stack, on the ddp,
// zero and pipeline labs' teacher data (labs/train/data.h) — a mean-squared error on the last
// stage.
#include <algorithm>

#include "core/memory/device_ops.h"
#include "labs/grid/grid_stage.h"
#include "labs/tensor_parallel/tp_mlp.h"
#include "labs/train/data.h"

namespace dtl {

namespace {

// The global batch of each step: the blocks' regression task (mlp_task_batch), or the MLP labs'
// teacher rows, step k's the rows [k·G, (k+1)·G) of make_teacher_data(the Mlp of 2L layers of
// width h, G·steps rows, seed 7) — the rows their step k takes with --batch G.
class GridMlpData {
 public:
  explicit GridMlpData(const GridSettings& s) : rows_(std::size_t(s.global_rows())), h_(std::size_t(s.hidden)) {
    if (s.mlp_form == TpMlpForm::layer_stack)
      teacher_ = make_teacher_data({s.hidden, s.hidden, s.hidden, 2 * s.layers}, s.global_rows() * s.steps,
                                   std::uint32_t(kMlpDataSeed));
  }
  void batch(int step, std::vector<float>& x, std::vector<float>& y) const {
    if (teacher_.samples == 0) return mlp_task_batch(step, rows_ * h_, x, y);
    const auto first = std::ptrdiff_t(std::size_t(step) * rows_ * h_), n = std::ptrdiff_t(rows_ * h_);
    x.assign(teacher_.x.begin() + first, teacher_.x.begin() + first + n);
    y.assign(teacher_.y.begin() + first, teacher_.y.begin() + first + n);
  }

 private:
  std::size_t rows_, h_;
  Dataset teacher_;
};

class GridMlpStage final : public GridStage {
 public:
  GridMlpStage(Topology& topo, const GridSettings& s, MemoryTracker& mem, StageBlocks b, Device device)
      : topo_(topo),
        s_(s),
        blocks_(b),
        ops_(train_ops(device)),
        data_(s),
        model_(s.mlp_shape(s.micro_rows()), {topo.tp_group(), ex::TpMode::plain}, mem, 7, ops_,
               BlockSpan{b.first, b.last}),
        acts_(std::size_t(s.micro_batches)),
        target_(mem, {std::int64_t(topo.is_last_stage() ? s.micro_rows() * s.hidden : 0)}, DType::f32, MemTag::data,
                device) {}

  void begin_step(int step) override {
    data_.batch(step, x_, y_);
    backwards_done_ = 0;
  }

  const float* forward(int m, const float* x, float* dy, double& loss) override {
    const int R = s_.micro_rows(), h = s_.hidden;
    const std::size_t elems = std::size_t(R) * std::size_t(h);
    // This dp replica's M micro-batches are consecutive rows of the global batch.
    const std::size_t first_row = std::size_t(topo_.coord().dp * s_.micro_batches + m) * std::size_t(R);
    // The first stage's input rows come from the host: forward copies them to the device.
    if (topo_.is_first_stage()) x = x_.data() + first_row * std::size_t(h);
    acts_[std::size_t(m)] = model_.make_activations(R);
    const float* y = model_.forward(x, acts_[std::size_t(m)]);
    if (topo_.is_last_stage()) {
      // The loss is the mean over the global batch's G·h values: this micro-batch's mean
      // (mse_loss over R·h) weighs R/G = 1/(D·M), and so does its dL/dy.
      copy_bytes(target_.data(), y_.data() + first_row * std::size_t(h), elems * sizeof(float));
      const float part = ops_.mse_loss(y, target_.as<float>(), dy, elems);
      const float weight = 1.0f / float(s_.grid.dp * s_.micro_batches);
      ops_.scale(weight, dy, elems);
      loss += double(part) * weight;
    }
    return y;
  }

  const float* backward(int m, const float* dy) override {
    // The first backward of the step writes the gradients, the others add to them.
    const float* dx = model_.backward(dy, acts_[std::size_t(m)], backwards_done_++ > 0);
    acts_[std::size_t(m)] = TpMlpActivations{};  // freed: what 1F1B saves over GPipe
    return topo_.is_first_stage() ? nullptr : dx;
  }

  float* params() override { return model_.params(); }
  float* grads() override { return model_.grads(); }
  std::size_t local_params() const override { return model_.local_params(); }
  void adamw_step(const kernels::AdamWConfig& c, int t) override { model_.adamw_step(c, t); }

  std::vector<std::string> names() const override { return model_.names(); }
  std::vector<std::size_t> whole_indices() const override {  // 4 tensors per block, blocks in order
    std::vector<std::size_t> at(names().size());
    for (std::size_t i = 0; i < at.size(); ++i) at[i] = 4 * std::size_t(blocks_.first) + i;
    return at;
  }
  std::vector<float> full_params(const std::string& name) override { return model_.full_params(name); }
  std::vector<HeldTensor> held_tensors() const override { return model_.held_tensors(); }
  HeldState host_state(bool with_optimizer) override { return model_.host_state(with_optimizer); }
  void set_state(const HeldState& st, bool with_optimizer) override { model_.set_state(st, with_optimizer); }

  // Per micro-batch: each block's input (R·h) and c_fc's output before and after GELU
  // (2·R·ff/T, ff = 4h or the stack's h), the stack's c_proj output before its GELU (R·h, every
  // block but the model's last), and the stage's output.
  double activation_bytes() const override {
    const TpMlpShape shape = s_.mlp_shape(s_.micro_rows());
    const double R = s_.micro_rows(), h = s_.hidden, T = s_.grid.tp;
    double before_gelu = 0;
    for (int l = blocks_.first; l <= blocks_.last; ++l) before_gelu += shape.gelu_after(l) ? R * h : 0;
    return 4.0 * (blocks_.count() * (R * h + 2.0 * R * shape.ff() / T) + before_gelu + R * h);
  }
  // Per block g's all-reduce forward and f's backward, of R·h floats each.
  double tp_bytes_per_micro_batch() const override {
    const double T = s_.grid.tp;
    return blocks_.count() * 2 * 2 * (T - 1) / T * 4.0 * s_.micro_rows() * s_.hidden;
  }

 private:
  Topology& topo_;
  GridSettings s_;
  StageBlocks blocks_;
  TrainOps& ops_;  // the rank's device
  GridMlpData data_;
  TpMlp model_;
  std::vector<TpMlpActivations> acts_;  // per micro-batch, from its forward to its backward
  std::vector<float> x_, y_;            // the global batch of this step (host)
  Tensor target_;                       // the last stage: a micro-batch's targets on the device
  int backwards_done_ = 0;
};

}  // namespace

std::unique_ptr<GridStage> make_grid_mlp_stage(Topology& topo, const GridSettings& s, MemoryTracker& mem, StageBlocks b,
                                               Device device) {
  return std::make_unique<GridMlpStage>(topo, s, mem, b, device);
}

OneRankRun train_mlp_one_rank(Comm& alone, const GridSettings& s, Device device) {
  MemoryTracker mem(alone.global_rank(), nullptr);
  TpMlp model(s.mlp_shape(s.global_rows()), {alone, ex::TpMode::plain}, mem, 7, train_ops(device));
  const std::size_t n = std::size_t(s.global_rows()) * std::size_t(s.hidden);
  Tensor target(mem, {std::int64_t(n)}, DType::f32, MemTag::data, device);
  OneRankRun run;
  int first = 0;
  if (!s.resume.empty()) {  // the checkpoint the ranks resumed from (resume_run verified it)
    const Manifest m = read_manifest(resolve_checkpoint(s.resume));
    HeldState st = model.host_state();
    load_held_tensors(m, model.held_tensors(), st);
    model.set_state(st);
    first = m.position.step;
  }
  const GridMlpData data(s);
  std::vector<float> x, y;
  for (int step = first; step < s.steps; ++step) {
    data.batch(step, x, y);
    copy_bytes(target.data(), y.data(), n * sizeof(float));
    run.losses.push_back(model.forward_backward(x.data(), target.as<float>()));
    model.adamw_step(s.adamw, step + 1);
  }
  for (const std::string& name : model.names()) run.weights.push_back(model.full_params(name));
  return run;
}

}  // namespace dtl
