#include "labs/train/optimizer.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

namespace {

constexpr std::size_t kChunk = std::size_t(1) << 16;  // elements widened at a time (256 KiB of fp32)
constexpr float kInitialF16Scale = 65536.0f;          // 2^16
constexpr int kGrowthInterval = 2000;

}  // namespace

ParamSlice slice_of(Mlp& model, Range r) {
  if (r.end > model.num_params() || r.begin > r.end)
    throw Error("range [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ") is outside the model's " +
                std::to_string(model.num_params()) + " parameters");
  return {element(model.param_data(), r.begin, model.precision()),
          element(model.grad_data(), r.begin, model.precision()), r.size(), model.precision()};
}

Optimizer::Optimizer(const ParamSlice& initial, Device device, MemoryTracker& mem, MasterWeights master)
    : ops_(train_ops(device)), mem_(mem), dtype_(initial.dtype), count_(initial.count) {
  if (dtype_ == DType::f32) return;  // the parameters are the fp32 weights
  if (dtype_ != DType::bf16 && dtype_ != DType::f16)
    throw UsageError("the optimizers update f32, bf16 or f16 parameters, not " + std::string(dtype_name(dtype_)));
  if (master == MasterWeights::keep) {  // starts as the 16-bit weights widened
    master_ = Tensor(mem, {std::int64_t(std::max<std::size_t>(1, count_))}, DType::f32, MemTag::master, device);
    ops_.to_float(initial.params, dtype_, master_.as<float>(), count_);
    ops_.synchronize();
  }
}

void Optimizer::ensure_workspace() {
  if (work_g_.numel()) return;
  const auto chunk = std::int64_t(std::max<std::size_t>(1, std::min(kChunk, count_)));
  work_g_ = Tensor(mem_, {chunk}, DType::f32, MemTag::other, ops_.device());
  if (!master_.numel()) work_w_ = Tensor(mem_, {chunk}, DType::f32, MemTag::other, ops_.device());
}

void Optimizer::check_slice(const ParamSlice& s) const {
  if (s.count != count_ || s.dtype != dtype_)
    throw Error("optimizer built for " + std::to_string(count_) + " " + std::string(dtype_name(dtype_)) +
                " elements was given " + std::to_string(s.count) + " " + std::string(dtype_name(s.dtype)));
}

bool Optimizer::gradients_finite(const ParamSlice& s) {
  ensure_workspace();
  for (std::size_t o = 0; o < count_; o += kChunk) {
    const std::size_t n = std::min(kChunk, count_ - o);
    ops_.to_float(element(s.grads, o, dtype_), dtype_, work_g_.as<float>(), n);
    if (!ops_.all_finite(work_g_.as<float>(), n)) return false;
  }
  return true;
}

bool Optimizer::step(const ParamSlice& s, float inv_scale) {
  check_slice(s);
  if (dtype_ == DType::f32) {  // fp32 never carries a loss scale
    if (inv_scale != 1.0f) throw Error("an fp32 optimizer step was given a loss scale; only f16 scales its loss");
    update(static_cast<float*>(s.params), static_cast<const float*>(s.grads), 0, count_, ++applied_);
    ops_.synchronize();
    return true;
  }
  if (!gradients_finite(s)) return false;
  ++applied_;
  for (std::size_t o = 0; o < count_; o += kChunk) {  // widen, update in fp32, round back
    const std::size_t n = std::min(kChunk, count_ - o);
    float* g = work_g_.as<float>();
    ops_.to_float(element(s.grads, o, dtype_), dtype_, g, n);
    if (inv_scale != 1.0f) ops_.scale(inv_scale, g, n);
    float* w = master_.numel() ? master_.as<float>() + o : work_w_.as<float>();
    if (!master_.numel()) ops_.to_float(element(s.params, o, dtype_), dtype_, w, n);
    update(w, g, o, n, applied_);
    ops_.from_float(w, element(s.params, o, dtype_), dtype_, n, false);
  }
  ops_.synchronize();
  return true;
}

namespace {
std::vector<float> to_host(const Tensor& t, std::size_t count) {
  std::vector<float> out(t.numel() ? count : 0);
  if (!out.empty()) copy_bytes(out.data(), t.data(), count * sizeof(float));
  return out;
}
void from_host(Tensor& t, const std::vector<float>& values, std::size_t count, const char* what) {
  if (values.size() != (t.numel() ? count : 0))
    throw Error(std::string("optimizer state: ") + what + " has " + std::to_string(values.size()) +
                " elements, the optimizer " + std::to_string(t.numel() ? count : 0));
  if (!values.empty()) copy_bytes(t.data(), values.data(), count * sizeof(float));
}
}  // namespace

OptimizerState Optimizer::save_state() const { return {applied_, to_host(master_, count_), {}, {}}; }

void Optimizer::load_state(const OptimizerState& s) {
  from_host(master_, s.master, count_, "the fp32 master");
  applied_ = s.steps;
}

OptimizerState AdamW::save_state() const {
  OptimizerState s = Optimizer::save_state();
  s.m = to_host(m_, count_);
  s.v = to_host(v_, count_);
  return s;
}

void AdamW::load_state(const OptimizerState& s) {
  Optimizer::load_state(s);
  from_host(m_, s.m, count_, "AdamW's m");
  from_host(v_, s.v, count_, "AdamW's v");
}

double adamw_state_bytes(std::size_t n, DType precision, MasterWeights master) {
  const bool has_master = precision != DType::f32 && master == MasterWeights::keep;
  return double(n) * (has_master ? 12.0 : 8.0);
}

AdamW::AdamW(const ParamSlice& initial, Device device, MemoryTracker& mem, const kernels::AdamWConfig& config,
             MasterWeights master)
    : Optimizer(initial, device, mem, master),
      config_(config),
      m_(mem, {std::int64_t(std::max<std::size_t>(1, initial.count))}, DType::f32, MemTag::optimizer, device),
      v_(mem, {std::int64_t(std::max<std::size_t>(1, initial.count))}, DType::f32, MemTag::optimizer, device) {}

bool AdamW::step(const ParamSlice& s, float inv_scale) {
  if (dtype_ == DType::f32 || !master_.numel()) return Optimizer::step(s, inv_scale);
  check_slice(s);
  // With a master copy, one fused kernel reads the 16-bit gradients, updates master, m and
  // v, and rounds the master into the 16-bit parameters (and refuses an overflowed step).
  // Adam's step count advances only on applied steps, as when GradScaler skips optimizer.step().
  const bool ok = ops_.adamw_step_mixed(master_.as<float>(), s.grads, s.params, dtype_, m_.as<float>(), v_.as<float>(),
                                        count_, config_, applied_ + 1, inv_scale);
  if (ok) ++applied_;
  ops_.synchronize();
  return ok;
}

void AdamW::update(float* w, const float* g, std::size_t offset, std::size_t n, int t) {
  ops_.adamw_step(w, g, m_.as<float>() + offset, v_.as<float>() + offset, n, config_, t);
}

Sgd::Sgd(const ParamSlice& initial, Device device, MemoryTracker& mem, float lr, MasterWeights master)
    : Optimizer(initial, device, mem, master), lr_(lr) {}

void Sgd::update(float* w, const float* g, std::size_t, std::size_t n, int) { ops_.sgd_step(w, g, n, lr_); }

LossScaler::LossScaler(DType precision)
    : dynamic_(precision == DType::f16), scale_(precision == DType::f16 ? kInitialF16Scale : 1.0f) {}

void LossScaler::update(bool step_applied) {
  if (!step_applied) {
    ++skipped_;
    if (dynamic_) scale_ *= 0.5f;
    good_since_growth_ = 0;
    return;
  }
  if (dynamic_ && ++good_since_growth_ == kGrowthInterval) {
    scale_ *= 2.0f;
    good_since_growth_ = 0;
  }
}

}  // namespace dtl
