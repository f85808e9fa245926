#include "labs/optimizer.h"

namespace dtl {

namespace {
constexpr float kInitialF16Scale = 65536.0f;  // 2^16
constexpr int kGrowthInterval = 2000;
}  // namespace

AdamW::AdamW(Mlp& model, MemoryTracker& mem, const kernels::AdamWConfig& config)
    : model_(model), config_(config),
      m_(mem, {std::int64_t(model.num_params())}, DType::f32, MemTag::optimizer),
      v_(mem, {std::int64_t(model.num_params())}, DType::f32, MemTag::optimizer) {
  if (model.precision() != DType::f32) {  // the master starts as the 16-bit weights widened
    master_ = Tensor(mem, {std::int64_t(model.num_params())}, DType::f32, MemTag::optimizer);
    to_float(model.param_data(), model.precision(), master_.as<float>(), model.num_params());
  }
  if (model.precision() == DType::f16) scale_ = kInitialF16Scale;
}

bool AdamW::step() {
  const std::size_t n = model_.num_params();
  if (model_.precision() == DType::f32) {
    kernels::adamw_step(model_.params(), model_.grads(), m_.as<float>(), v_.as<float>(), n, config_, ++applied_);
    return true;
  }
  // Adam's step count only advances on applied steps, as when GradScaler skips optimizer.step().
  if (!kernels::adamw_step_mixed(master_.as<float>(), model_.grad_data(), model_.param_data(), model_.precision(),
                                 m_.as<float>(), v_.as<float>(), n, config_, applied_ + 1, 1.0f / scale_)) {
    ++skipped_;
    scale_ *= 0.5f;
    good_since_growth_ = 0;
    return false;
  }
  ++applied_;
  if (model_.precision() == DType::f16 && ++good_since_growth_ == kGrowthInterval) {
    scale_ *= 2.0f;
    good_since_growth_ = 0;
  }
  return true;
}

std::vector<float> AdamW::unscaled_gradients() const {
  std::vector<float> g(model_.num_params());
  to_float(model_.grad_data(), model_.precision(), g.data(), g.size());
  for (float& x : g) x /= scale_;
  return g;
}

const float* AdamW::weights() const {
  return model_.precision() == DType::f32 ? static_cast<const Mlp&>(model_).params() : master_.as<float>();
}

}  // namespace dtl
