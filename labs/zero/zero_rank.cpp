#include "labs/zero/zero_rank.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "labs/train/buckets.h"
#include "labs/train/step_clock.h"

namespace dtl {

namespace {

// Stage 0 trains the model's own buffers; stages 1-3 bind the model to theirs.
MlpStorage storage_of(ZeroStage stage) { return shards_optimizer(stage) ? MlpStorage{false, false} : MlpStorage{}; }

}  // namespace

ZeroRank::ZeroRank(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, ZeroStage stage, int prefetch_depth)
    : comm_(comm),
      cfg_(cfg),
      s_(s),
      stage_(stage),
      depth_(prefetch_depth),
      mark_(comm.trace() ? comm.trace()->log(comm.global_rank(), kStreamMain).size() : 0),
      mem_(comm.global_rank(), comm.trace()),
      pool_(mem_, rank_device(cfg.device, comm)),
      model_(s.shape, mem_, 1, s.precision, rank_device(cfg.device, comm), {}, storage_of(stage)),
      units_(make_zero_units(model_.layout(), s.layers_per_unit, comm.rank(), comm.size())),
      wait_words_(zero_wait_words(units_)),
      es_(dtype_size(s.precision)),
      scaler_(s.precision),
      batch_(mem_, model_.device(), s.shape.in, s.shape.out, s.batch / comm.size()) {
  const Device dev = model_.device();
  const auto n = [](std::size_t count) {
    return std::vector<std::int64_t>{std::int64_t(std::max<std::size_t>(1, count))};
  };
  if (!shards_optimizer(stage_)) {
    opts_.push_back(std::make_unique<AdamW>(whole_model(model_), dev, mem_, s.adamw, s.master));
    ddp_.emplace(comm, model_, s.bucket_mb);  // stage 0 is DDP, on the DDP lab's bucketed code
    return;
  }
  // Parameters: the padded whole (stages 1, 2) or this rank's chunks (stage 3), filled with
  // the model's initial values piece by piece; the padding stays zero.
  std::vector<ParamPiece> pieces;
  if (!shards_params(stage_)) {
    full_params_ = Tensor(mem_, n(units_.padded_numel), s.precision, MemTag::param, dev);
    for (const ZeroUnit& u : units_.units) pieces.push_back({u.range, at(full_params_.data(), u.padded_begin)});
  } else {
    shard_params_ = Tensor(mem_, n(units_.shard_numel), s.precision, MemTag::param, dev);
    for (const ZeroUnit& u : units_.units)
      pieces.push_back(
          {{u.range.begin + u.own.begin, u.range.begin + u.own.end}, at(shard_params_.data(), u.shard_begin)});
  }
  model_.initial_params(pieces);
  if (!shards_gradients(stage_))
    full_grads_ = Tensor(mem_, n(units_.padded_numel), s.precision, MemTag::grad, dev);
  else
    shard_grads_ = Tensor(mem_, n(units_.shard_numel), s.precision, MemTag::grad, dev);
  for (const ZeroUnit& u : units_.units) {
    if (!shards_params(
            stage_)) {  // the model reads its parameters from the padded whole, and stage 1 writes gradients there
      for (int l = u.first_layer; l <= u.last_layer; ++l) {
        const std::size_t off = u.padded_begin + (model_.layout().layer_range(l).begin - u.range.begin);
        model_.bind_layer_params(l, at(full_params_.data(), off));
        if (!shards_gradients(stage_)) model_.bind_layer_grads(l, at(full_grads_.data(), off));
      }
    }
    // The optimizer of this rank's real elements of the unit (its state sized to them).
    const ex::ShardStep st =
        ex::shard_step({unit_params(u), s.precision}, shards_params(stage_), unit_shard_grads(u), u.own);
    opts_.push_back(st.count ? std::make_unique<AdamW>(ParamSlice{st.params, st.grads, st.count, s.precision}, dev,
                                                       mem_, s.adamw, s.master)
                             : nullptr);
  }
  const std::size_t U = units_.units.size();
  gathered_.resize(U);
  gathering_.resize(U);
  issued_.assign(U, false);
  open_buckets_.resize(U);
}

std::size_t ZeroRank::memory_mark() const { return mark_; }

void* ZeroRank::at(void* base, std::size_t i) const { return static_cast<std::byte*>(base) + i * es_; }

void* ZeroRank::unit_params(const ZeroUnit& u) {
  return shards_params(stage_) ? at(shard_params_.data(), u.shard_begin) : at(full_params_.data(), u.padded_begin);
}

void* ZeroRank::unit_shard_grads(const ZeroUnit& u) {
  // Stage 1 reduce-scatters in place: the rank's chunk of the padded whole.
  if (!shards_gradients(stage_)) return at(full_grads_.data(), u.padded_begin + std::size_t(comm_.rank()) * u.chunk);
  return at(shard_grads_.data(), u.shard_begin);
}

double ZeroRank::wait(Request& r) {
  if (!clock_) {  // outside a step: nothing to count
    r.wait();
    return 0;
  }
  return clock_->waiting([&] { r.wait(); });
}

// ---- stage 3: gather before use, free after ----------------------------------------------

void ZeroRank::gather_for(const std::vector<int>& order, int position) {
  for (int u : ex::units_to_gather(order, position, depth_, issued_)) {  // the learner's exercise 17
    const ZeroUnit& unit = units_.units[std::size_t(u)];
    const Role whose{.block = std::int16_t(unit.first_layer)};  // the trace says whose parameters
    const std::size_t bytes = unit.padded_numel(comm_.size()) * es_;
    // Its alloc and free events say whose it is: `dtlab run --step` draws the layer gathered, then freed.
    const std::uint16_t label =
        comm_.trace() ? comm_.trace()->label("gathered layer " + std::to_string(unit.first_layer), whose) : 0;
    gathered_[std::size_t(u)] = pool_.acquire(bytes, MemTag::gather, bytes, label);
    const ScopedCollectiveRole which(whose);
    gathering_[std::size_t(u)] =
        comm_.iall_gather(unit_params(unit), gathered_[std::size_t(u)].data(), unit.chunk, s_.precision);
    issued_[std::size_t(u)] = true;
  }
  const int u = order[std::size_t(position)];
  const ZeroUnit& unit = units_.units[std::size_t(u)];
  if (!issued_[std::size_t(u)])
    throw Error("units_to_gather did not issue unit " + std::to_string(u) + ", which computes now");
  waited_gather_ += wait(gathering_[std::size_t(u)]);
  for (int l = unit.first_layer; l <= unit.last_layer; ++l)
    model_.bind_layer_params(
        l, at(gathered_[std::size_t(u)].data(), model_.layout().layer_range(l).begin - unit.range.begin));
}

void ZeroRank::release_gather(const ZeroUnit& u) {
  for (int l = u.first_layer; l <= u.last_layer; ++l) model_.bind_layer_params(l, nullptr);
  gathered_[std::size_t(&u - units_.units.data())].reset();
}

// ---- gradients: a bucket per unit, reduce-scattered into the shard ------------------------

void ZeroRank::open_bucket(const ZeroUnit& u) {
  wait_reductions(1);  // at most two buckets alive: the one reducing and this one
  const std::size_t index = std::size_t(&u - units_.units.data()), padded = u.padded_numel(comm_.size());
  PooledBuffer bucket = pool_.acquire(padded * es_, MemTag::comm);
  if (padded > u.range.size()) {  // the padding is summed too: it must be zero
    const std::vector<std::byte> zeros((padded - u.range.size()) * es_);
    copy_bytes(at(bucket.data(), u.range.size()), zeros.data(), zeros.size());
  }
  for (int l = u.first_layer; l <= u.last_layer; ++l)
    model_.bind_layer_grads(l, at(bucket.data(), model_.layout().layer_range(l).begin - u.range.begin));
  open_buckets_[index] = std::move(bucket);
}

void ZeroRank::reduce_unit(const ZeroUnit& u) {
  const std::size_t index = std::size_t(&u - units_.units.data());
  const ScopedCollectiveRole which({.pass = Pass::backward, .block = std::int16_t(u.first_layer)});  // whose gradients
  Reduction r;
  if (!shards_gradients(stage_)) {
    void* unit_grads = at(full_grads_.data(), u.padded_begin);
    r.request = ex::reduce_scatter_gradients(comm_, {unit_grads, s_.precision}, unit_shard_grads(u), u.chunk);
  } else {
    r.bucket = std::move(open_buckets_[index]);
    for (int l = u.first_layer; l <= u.last_layer; ++l) model_.bind_layer_grads(l, nullptr);
    r.request = ex::reduce_scatter_gradients(comm_, {r.bucket.data(), s_.precision}, unit_shard_grads(u), u.chunk);
  }
  reducing_.push_back(std::move(r));
}

void ZeroRank::wait_reductions(std::size_t keep) {
  while (reducing_.size() > keep) {
    wait(reducing_.front().request);
    reducing_.pop_front();  // gives its bucket back to the pool
  }
}

// ---- hooks ------------------------------------------------------------------------------

LayerHooks ZeroRank::forward_hooks() {
  LayerHooks h;
  if (!shards_params(stage_)) return h;
  h.before_forward = [this](int l) {
    const ZeroUnit& u = units_.unit_of_layer(l);
    if (l != u.first_layer) return;
    std::vector<int> order(units_.units.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    gather_for(order, int(&u - units_.units.data()));
  };
  h.after_forward = [this](int l) {
    const ZeroUnit& u = units_.unit_of_layer(l);
    if (l == u.last_layer) release_gather(u);
  };
  return h;
}

LayerHooks ZeroRank::backward_hooks() {
  if (ddp_) return ddp_->launch_hooks();  // stage 0: DDP's buckets, launched as their layers finish
  // Stages 1-3: a unit's gradients reduce-scattered once its first layer's backward is done.
  LayerHooks h;
  h.before_backward = [this](int l) {
    const ZeroUnit& u = units_.unit_of_layer(l);
    if (l != u.last_layer) return;
    if (shards_params(stage_)) {
      const int U = int(units_.units.size());
      std::vector<int> order(std::size_t(U), 0);
      for (int i = 0; i < U; ++i) order[std::size_t(i)] = U - 1 - i;
      gather_for(order, U - 1 - int(&u - units_.units.data()));
    }
    if (shards_gradients(stage_)) open_bucket(u);
  };
  h.after_backward = [this](int l) {
    const ZeroUnit& u = units_.unit_of_layer(l);
    if (l != u.first_layer) return;
    if (shards_params(stage_)) release_gather(u);
    reduce_unit(u);
  };
  return h;
}

// ---- the step ---------------------------------------------------------------------------

bool ZeroRank::gradients_finite_everywhere() {
  // f16 only: every rank checks its own shard, and all skip together if any overflowed
  // (DeepSpeed's overflow vote; 1 element all-reduced, counted with the step's bytes).
  float finite = 1;
  std::vector<float> g;
  for (const ZeroUnit& u : units_.units) {
    g.resize(u.own.end - u.own.begin);
    if (g.empty()) continue;
    copy_to_host_floats(unit_shard_grads(u), s_.precision, g);
    for (float x : g) finite = std::isfinite(x) ? finite : 0.0f;
  }
  comm_.all_reduce(&finite, &finite, 1, DType::f32, ReduceOp::min);
  return finite == 1.0f;
}

void ZeroRank::optimizer_step() {
  const float inv_scale = 1.0f / scaler_.scale();
  if (!shards_optimizer(stage_)) {
    scaler_.update(opts_[0]->step(whole_model(model_), inv_scale));
    return;
  }
  if (s_.precision == DType::f16 && !gradients_finite_everywhere()) {
    scaler_.update(false);
    return;
  }
  for (std::size_t i = 0; i < units_.units.size(); ++i) {
    if (!opts_[i]) continue;
    const ZeroUnit& u = units_.units[i];
    const ex::ShardStep st =
        ex::shard_step({unit_params(u), s_.precision}, shards_params(stage_), unit_shard_grads(u), u.own);
    opts_[i]->step({st.params, st.grads, st.count, s_.precision}, inv_scale);
  }
  scaler_.update(true);
}

void ZeroRank::all_gather_params() {
  std::vector<Request> gathers;
  for (const ZeroUnit& u : units_.units) {
    const ScopedCollectiveRole which({.block = std::int16_t(u.first_layer)});  // the trace says whose parameters
    gathers.push_back(ex::all_gather_params(comm_, {at(full_params_.data(), u.padded_begin), s_.precision}, u.chunk));
  }
  for (Request& r : gathers) wait(r);
}

// One step of the stage's algorithm; the clock measures it (labs/train/step_clock.h), the
// hooks (forward_hooks, backward_hooks) are where the stages differ.
float ZeroRank::train_step(const Dataset& data, int first_row, int rows, int step, ZeroStepTiming& t) {
  StepClock clock(comm_, cfg_, s_.shape.layers, step);
  clock_ = &clock;
  struct Unset {  // no dangling clock_ after the step, even when it throws (a fault, an abort)
    StepClock*& clock;
    ~Unset() { clock = nullptr; }
  } unset{clock_};
  waited_gather_ = 0;
  batch_.load(data, first_row, rows);  // the rows onto the rank's device
  std::fill(issued_.begin(), issued_.end(), false);
  const float* y = clock.compute(Pass::forward, forward_hooks(),
                                 [&](const LayerHooks& h) { return model_.forward(batch_.x(), rows, h); });
  const float loss = batch_.mse_loss(model_.ops(), y, scaler_.scale());
  std::fill(issued_.begin(), issued_.end(), false);
  clock.compute(Pass::backward, backward_hooks(), [&](const LayerHooks& h) { model_.backward(batch_.dy(), false, h); });
  wait_reductions(0);                              // stages 1-3: the last units' reduce-scatters
  if (ddp_) clock.waiting([&] { ddp_->wait(); });  // stage 0: DDP's buckets
  t.optimizer = clock.compute(Pass::optimizer, [&] { optimizer_step(); });
  if (gathers_after_step(stage_)) all_gather_params();  // every rank needs every parameter again
  t.step = clock.elapsed();
  t.exposed = clock.exposed();
  t.exposed_gather = waited_gather_;
  return loss;
}

// ---- what the checks read -------------------------------------------------------------

namespace {
// Sums every rank's pieces into rank 0's vector: each element comes from exactly one rank
// (the others add 0), so the sum is exact.
std::vector<float> assemble_on_rank0(Comm& comm, std::vector<float>& mine) {
  std::vector<float> all(comm.rank() == 0 ? mine.size() : 0);
  comm.reduce(mine.data(), comm.rank() == 0 ? all.data() : mine.data(), mine.size(), DType::f32, ReduceOp::sum, 0);
  return all;
}
void place(std::vector<float>& full, std::size_t at, const void* src, DType t, std::size_t count) {
  std::vector<float> piece(count);
  copy_to_host_floats(src, t, piece);
  std::copy(piece.begin(), piece.end(), full.begin() + std::ptrdiff_t(at));
}
}  // namespace

std::vector<float> ZeroRank::full_weights() {
  std::vector<float> mine(units_.numel, 0.0f);
  if (!shards_optimizer(stage_)) {
    if (comm_.rank() == 0) {
      if (opts_[0]->master())
        place(mine, 0, opts_[0]->master(), DType::f32, units_.numel);
      else
        place(mine, 0, model_.param_data(), s_.precision, units_.numel);
    }
  } else {
    for (std::size_t i = 0; i < units_.units.size(); ++i) {
      if (!opts_[i]) continue;
      const ZeroUnit& u = units_.units[i];
      const ex::ShardStep st =
          ex::shard_step({unit_params(u), s_.precision}, shards_params(stage_), unit_shard_grads(u), u.own);
      if (opts_[i]->master())
        place(mine, u.range.begin + u.own.begin, opts_[i]->master(), DType::f32, st.count);
      else
        place(mine, u.range.begin + u.own.begin, st.params, s_.precision, st.count);
    }
  }
  return assemble_on_rank0(comm_, mine);
}

std::vector<float> ZeroRank::full_gradients() {
  std::vector<float> mine(units_.numel, 0.0f);
  if (!shards_optimizer(stage_)) {
    if (comm_.rank() == 0) place(mine, 0, model_.grad_data(), s_.precision, units_.numel);
  } else {
    for (const ZeroUnit& u : units_.units)
      if (u.own.end > u.own.begin)
        place(mine, u.range.begin + u.own.begin, unit_shard_grads(u), s_.precision, u.own.end - u.own.begin);
  }
  for (float& g : mine) g /= scaler_.scale();
  return assemble_on_rank0(comm_, mine);
}

double ZeroRank::exact_model_state() const {
  const double es = double(es_);
  auto state = [&](std::size_t n) { return adamw_state_bytes(n, s_.precision, s_.master); };
  if (!shards_optimizer(stage_)) return 2 * es * double(units_.numel) + state(units_.numel);
  double optimizer = 0;
  for (const ZeroUnit& u : units_.units)
    if (u.own.end > u.own.begin) optimizer += state(u.own.end - u.own.begin);
  const double padded = double(units_.padded_numel), shard = double(units_.shard_numel);
  // Parameters: the padded whole, or the shard; gradients the same way.
  const double params = shards_params(stage_) ? es * shard : es * padded;
  const double grads = shards_gradients(stage_) ? es * shard : es * padded;
  return params + grads + optimizer;
}

}  // namespace dtl
