// A grid rank's step (grid_rank.h).
#include "labs/grid/grid_rank.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "exercises/pipeline.h"
#include "exercises/zero.h"
#include "labs/train/train_ops.h"

namespace dtl {

namespace {

constexpr int kGradientTag = 1 << 20;  // pp tags: micro-batch m's activation m, its gradient this + m

std::unique_ptr<GridStage> make_stage(Topology& topo, const GridSettings& s, MemoryTracker& mem, const StageBlocks& b,
                                      Device device) {
  return s.model == GridModelKind::gpt ? make_grid_gpt_stage(topo, s, mem, b, device)
                                       : make_grid_mlp_stage(topo, s, mem, b, device);
}

Tensor rows_tensor(MemoryTracker& mem, int rows, int width, MemTag tag, Device device) {
  return Tensor(mem, {std::int64_t(rows), std::int64_t(width)}, DType::f32, tag, device);
}

}  // namespace

GridRank::GridRank(Topology& topo, const GridSettings& s, MemoryTracker& mem, Device device)
    : topo_(topo),
      s_(s),
      mem_(mem),
      device_(device),
      blocks_(stage_blocks(s.layers, s.grid.pp, topo.coord().pp)),
      model_(make_stage(topo, s, mem, blocks_, device)),
      schedule_(pipeline::make_schedule(s.schedule, {s.grid.pp, s.micro_batches, 1})) {
  const int M = s.micro_batches, R = s.micro_rows(), h = s.hidden;
  for (int m = 0; m < M; ++m) {
    if (!topo.is_first_stage()) input_.push_back(rows_tensor(mem, R, h, MemTag::comm, device));
    if (!topo.is_last_stage()) output_.push_back(rows_tensor(mem, R, h, MemTag::comm, device));
    // From the next stage, or on the last the MLP's loss gradient (the GPT's stays with its logits).
    grad_in_.push_back(rows_tensor(mem, R, h, MemTag::comm, device));
    if (!topo.is_first_stage()) grad_out_.push_back(rows_tensor(mem, R, h, MemTag::comm, device));
  }
  if (s.zero == GridZero::optimizer_states) {
    const std::size_t n = model_->local_params(), D = std::size_t(s.grid.dp);
    chunk_ = (n + D - 1) / D;
    padded_ = Tensor(mem, {std::int64_t(D * chunk_)}, DType::f32, MemTag::comm, device);  // zeroed: the padding stays 0
    shard_grads_ = Tensor(mem, {std::int64_t(chunk_)}, DType::f32, MemTag::grad, device);
    adam_m_ = Tensor(mem, {std::int64_t(chunk_)}, DType::f32, MemTag::optimizer, device);
    adam_v_ = Tensor(mem, {std::int64_t(chunk_)}, DType::f32, MemTag::optimizer, device);
  }
}

// --compute-us: the action lasts `units` × compute_us from t0 (a sleep, which frees the core).
void GridRank::pace(double t0, int units) const {
  if (s_.compute_us <= 0) return;
  const double left = t0 + units * s_.compute_us * 1e-6 - now();
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

double GridRank::now() const { return double(topo_.world().trace()->now_ns()) * 1e-9; }

// An action (F or B of micro-batch m): its span in the trace, as the pipeline lab records
// its own (the pipeline view draws the grid's stages from them), and its time in the step's
// totals, from one reading of the clock. The step runs from its first action's start to its last one's end, as the
// timeline draws it (viz/model/step_idle.h): the bubble's window holds no wait before the
// first receive.
void GridRank::record_action(Pass pass, int m, double t0) {
  const double t1 = now();
  busy_ += t1 - t0;
  if (begin_ < 0) begin_ = t0;
  end_ = t1;
  Trace* tr = topo_.world().trace();
  tr->record(Event{.begin_ns = std::int64_t(t0 * 1e9),
                   .end_ns = std::int64_t(t1 * 1e9),
                   .rank = topo_.world().global_rank(),
                   .step = step_,
                   .chunk = 0,
                   .micro_batch = std::int16_t(m),
                   .label = tr->label(pass_letter(pass), Role{.pass = pass}),
                   .kind = EventKind::compute});
}

void GridRank::forward(int m) {
  const double t0 = now();
  const std::size_t bytes = std::size_t(s_.micro_rows()) * std::size_t(s_.hidden) * sizeof(float);
  const float* x = topo_.is_first_stage() ? nullptr : input_[std::size_t(m)].as<float>();
  const float* y = model_->forward(m, x, grad_in_[std::size_t(m)].as<float>(), loss_);
  if (!topo_.is_last_stage())
    copy_bytes(output_[std::size_t(m)].data(), y, bytes);  // acts may be freed before the send is done
  pace(t0, 1);
  record_action(Pass::forward, m, t0);
}

void GridRank::backward(int m) {
  const double t0 = now();
  const std::size_t bytes = std::size_t(s_.micro_rows()) * std::size_t(s_.hidden) * sizeof(float);
  const float* dx = model_->backward(m, grad_in_[std::size_t(m)].as<float>());
  if (!topo_.is_first_stage()) copy_bytes(grad_out_[std::size_t(m)].data(), dx, bytes);
  pace(t0, 2);
  record_action(Pass::backward, m, t0);
}

float GridRank::step(int step) {
  step_ = step;
  model_->begin_step(step);
  loss_ = 0, busy_ = 0;
  Comm& pp = topo_.pp_group();
  const int stage = topo_.coord().pp;
  const std::size_t bytes = std::size_t(s_.micro_rows()) * std::size_t(s_.hidden) * sizeof(float);
  auto what = [&](const char* thing, int m, int from) {
    return TransferInfo{
        -1, -1, 1, std::string(thing) + " of micro-batch " + std::to_string(m) + " from stage " + std::to_string(from)};
  };
  ex::StageOps ops;
  ops.has_previous = [&](int) { return !topo_.is_first_stage(); };
  ops.has_next = [&](int) { return !topo_.is_last_stage(); };
  ops.recv_activation = [&](int m, int) {
    return pp.irecv(input_[std::size_t(m)].data(), bytes, stage - 1, m, what("the activation", m, stage - 1));
  };
  ops.send_activation = [&](int m, int) { return pp.isend(output_[std::size_t(m)].data(), bytes, stage + 1, m); };
  ops.recv_gradient = [&](int m, int) {
    return pp.irecv(grad_in_[std::size_t(m)].data(), bytes, stage + 1, kGradientTag + m,
                    what("the gradient", m, stage + 1));
  };
  ops.send_gradient = [&](int m, int) {
    return pp.isend(grad_out_[std::size_t(m)].data(), bytes, stage - 1, kGradientTag + m);
  };
  ops.forward = [&](int m, int) { forward(m); };
  ops.backward = [&](int m, int) { backward(m); };
  ops.weight = [](int, int) { throw Error("the grid lab's schedules have no W actions"); };
  std::vector<Request> sends;
  begin_ = -1, end_ = 0;                                            // (extend_step)
  ex::run_stage(schedule_.stages[std::size_t(stage)], ops, sends);  // exercise 19
  for (Request& r : sends) r.wait();
  model_->after_backward();
  sync_and_step(step + 1);
  // The loss lives on the last stage's ranks (the same on its tp ranks): summed over the
  // dp replicas there, then the largest over the world hands it to everyone.
  double loss = loss_;
  if (topo_.is_last_stage()) topo_.dp_group().all_reduce(&loss, &loss, 1, DType::f64, ReduceOp::sum);
  topo_.world().all_reduce(&loss, &loss, 1, DType::f64, ReduceOp::max);
  return float(loss);
}

void GridRank::sync_and_step(int t) {
  if (s_.zero == GridZero::optimizer_states) return zero1_step(t);
  // Plain data parallelism: every replica's gradient summed (each micro-batch's dL/dy is
  // already weighted 1/(D·M)), then the same AdamW step everywhere.
  topo_.dp_group().all_reduce(model_->grads(), model_->grads(), model_->local_params(), DType::f32, ReduceOp::sum);
  model_->adamw_step(s_.adamw, t);
}

// ZeRO-1 on the data axis: reduce-scatter the padded gradients, AdamW on this rank's shard
// only (its moments are 1/D of the plain ones), all-gather the updated parameters.
void GridRank::zero1_step(int t) {
  Comm& dp = topo_.dp_group();
  const std::size_t n = model_->local_params();
  const ex::ShardRange shard = ex::shard_range(n, dp.rank(), dp.size());  // exercise 13
  float* padded = padded_.as<float>();
  copy_bytes(padded, model_->grads(), n * sizeof(float));
  dp.reduce_scatter(padded, shard_grads_.data(), chunk_, DType::f32, ReduceOp::sum);
  float* params = model_->params();
  train_ops(device_).adamw_step(params + shard.begin, shard_grads_.as<float>(), adam_m_.as<float>(),
                                adam_v_.as<float>(), shard.end - shard.begin, s_.adamw, t);
  float* mine = padded + std::size_t(dp.rank()) * chunk_;
  copy_bytes(mine, params + shard.begin, (shard.end - shard.begin) * sizeof(float));
  dp.all_gather(mine, padded, chunk_, DType::f32);  // in place: this rank's chunk is the input
  copy_bytes(params, padded, n * sizeof(float));
}

}  // namespace dtl
