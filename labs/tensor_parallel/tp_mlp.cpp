// The tensor-parallel MLP (tp_mlp.h): every block is the exercises' column-parallel c_fc,
// a local GELU, and the row-parallel c_proj.
#include "labs/tensor_parallel/tp_mlp.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <utility>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"

namespace dtl {

void mlp_task_batch(int step, std::size_t elements, std::vector<float>& x, std::vector<float>& y) {
  std::mt19937 gen(kMlpTaskSeed + std::uint32_t(step));
  std::normal_distribution<float> n(0.0f, 1.0f);
  x.resize(elements), y.resize(elements);
  for (std::size_t i = 0; i < elements; ++i) x[i] = n(gen), y[i] = 0.5f * std::sin(3.0f * x[i]);
}

namespace {
// A whole [out × in] layer, as one rank holds it.
ex::LinearSlice whole_layer(int out, int in) { return {0, out, 0, in, 0, out}; }
}  // namespace

ex::LinearMath linear_math(TrainOps& ops) {
  ex::LinearMath m;
  m.forward = [&ops](const float* X, const float* W, const float* b, float* Y, int rows, int in, int out) {
    ops.linear_forward(X, W, b, Y, rows, in, out);
  };
  m.backward = [&ops](const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int rows,
                      int in, int out,
                      bool accumulate) { ops.linear_backward(X, W, dY, dX, dW, db, rows, in, out, accumulate); };
  return m;
}

namespace {

std::string block_name(int l, const char* what) { return "h." + std::to_string(l) + ".mlp." + what; }

// The full tensor `name` of the model, the same on every rank and for every T: uniform in
// ±1/√in as nn.Linear draws, from a generator seeded by the model's seed and the name.
std::vector<float> full_tensor(std::uint32_t seed, const std::string& name, std::size_t n, int in) {
  std::seed_seq seq{seed, std::uint32_t(std::hash<std::string>{}(name))};
  std::mt19937 gen(seq);
  std::uniform_real_distribution<float> u(-1.0f / std::sqrt(float(in)), 1.0f / std::sqrt(float(in)));
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// Copies rows [s.row_begin, s.row_end) × columns [s.col_begin, s.col_end) of the full
// [out × in] matrix into dst (row-major, as the rank holds it).
void copy_slice(const std::vector<float>& full, int in, const ex::LinearSlice& s, float* dst) {
  for (int r = s.row_begin; r < s.row_end; ++r)
    for (int c = s.col_begin; c < s.col_end; ++c) *dst++ = full[std::size_t(r) * std::size_t(in) + std::size_t(c)];
}

}  // namespace

TpMlp::TpMlp(const TpMlpShape& shape, const ex::TpGroup& tp, MemoryTracker& mem, std::uint32_t seed, TrainOps& ops,
             BlockSpan span)
    : shape_(shape),
      tp_(tp),
      ops_(ops),
      math_(linear_math(ops)),
      T_(tp.comm.size()),
      r_(tp.comm.rank()),
      first_(span.first),
      last_(span.last < 0 ? shape.layers - 1 : span.last),
      mem_(mem) {
  if (first_ < 0 || first_ > last_ || last_ >= shape.layers)
    throw Error("TpMlp: blocks " + std::to_string(first_) + ".." + std::to_string(last_) + " of " +
                std::to_string(shape.layers));
  const int h = shape.hidden;
  ff_local_ = shape.ff() / T_;
  std::size_t n = 0;
  for (int l = first_; l <= last_; ++l) {
    Block b;
    b.fc_w = n, n += std::size_t(ff_local_) * h;
    b.fc_b = n, n += std::size_t(ff_local_);
    b.proj_w = n, n += std::size_t(h) * ff_local_;
    b.proj_b = n, n += std::size_t(h);  // every rank keeps c_proj's bias; rank 0 adds it (tp_slices)
    blocks_.push_back(b);
  }
  const Device dev = ops.device();
  params_ = Tensor(mem, {std::int64_t(n)}, DType::f32, MemTag::param, dev);
  grads_ = Tensor(mem, {std::int64_t(n)}, DType::f32, MemTag::grad, dev);
  init_params(seed);
  if (Trace* trace = tp.comm.trace())  // interned once, not on every block
    for (int l = first_; l <= last_; ++l) {
      fwd_labels_.push_back(
          trace->label("fwd block " + std::to_string(l), Role{.pass = Pass::forward, .block = std::int16_t(l)}));
      bwd_labels_.push_back(
          trace->label("bwd block " + std::to_string(l), Role{.pass = Pass::backward, .block = std::int16_t(l)}));
    }
  fwd_labels_.resize(blocks_.size()), bwd_labels_.resize(blocks_.size());  // 0 without a trace
  const std::int64_t R = shape.rows, Rl = local_rows();
  // Sequence parallel: c_fc's gathered input lives only while it is used, and backward
  // gathers it again (Megatron-LM's choice: one more all-gather, 1/T of the memory).
  if (tp.mode == ex::TpMode::sequence_parallel) x_full_ = Tensor(mem, {R, h}, DType::f32, MemTag::other, dev);
  partial_ = Tensor(mem, {R, h}, DType::f32, MemTag::other, dev);
  dy_full_ = Tensor(mem, {R, h}, DType::f32, MemTag::other, dev);
  dx_full_ = Tensor(mem, {R, h}, DType::f32, MemTag::other, dev);
  dz_ = Tensor(mem, {R, ff_local_}, DType::f32, MemTag::other, dev);
  da_ = Tensor(mem, {R, ff_local_}, DType::f32, MemTag::other, dev);
  dres_ = Tensor(mem, {Rl, h}, DType::f32, MemTag::other, dev);
  dnext_ = Tensor(mem, {Rl, h}, DType::f32, MemTag::other, dev);
  if (shape.form == TpMlpForm::layer_stack) dpre_ = Tensor(mem, {Rl, h}, DType::f32, MemTag::other, dev);
}

// "fwd block L" / "bwd block L": how the lab tells the blocks' collectives from the rest.
ScopedSpan TpMlp::block_span(std::uint16_t label) {
  return ScopedSpan(tp_.comm.trace(), tp_.comm.global_rank(), EventKind::compute, label);
}

int TpMlp::local_rows(int rows) const { return tp_.mode == ex::TpMode::sequence_parallel ? rows / T_ : rows; }

TpMlpActivations TpMlp::make_activations(int rows) {
  if (rows > shape_.rows)
    throw Error("TpMlp: " + std::to_string(rows) + " rows, made for " + std::to_string(shape_.rows));
  TpMlpActivations a;
  a.rows = rows;
  const std::int64_t R = rows, Rl = local_rows(rows), h = shape_.hidden;
  const Device dev = ops_.device();
  for (int l = first_; l <= last_; ++l) {
    a.x.emplace_back(mem_, std::vector<std::int64_t>{Rl, h}, DType::f32, MemTag::activation, dev);
    a.z.emplace_back(mem_, std::vector<std::int64_t>{R, ff_local_}, DType::f32, MemTag::activation, dev);
    a.a.emplace_back(mem_, std::vector<std::int64_t>{R, ff_local_}, DType::f32, MemTag::activation, dev);
    a.p.push_back(shape_.gelu_after(l) ? Tensor(mem_, {Rl, h}, DType::f32, MemTag::activation, dev) : Tensor{});
  }
  a.out = Tensor(mem_, {Rl, h}, DType::f32, MemTag::activation, dev);
  return a;
}

void TpMlp::init_params(std::uint32_t seed) {
  const int h = shape_.hidden, ff = shape_.ff();
  std::vector<float> host(params_.numel());
  for (int l = first_; l <= last_; ++l) {
    const Block& b = blocks_[std::size_t(l - first_)];
    // Exercise tp_slices; one rank holds the whole layer without asking it (plain()).
    const ex::LinearSlice fc = plain() ? whole_layer(ff, h) : ex::column_parallel_slice(ff, h, r_, T_);
    const ex::LinearSlice proj = plain() ? whole_layer(h, ff) : ex::row_parallel_slice(h, ff, r_, T_);
    proj_adds_bias_ = proj.bias_end > proj.bias_begin;  // the learner's slice says who adds c_proj's bias
    copy_slice(full_tensor(seed, block_name(l, "c_fc.weight"), std::size_t(ff) * h, h), h, fc, &host[b.fc_w]);
    const std::vector<float> fc_bias = full_tensor(seed, block_name(l, "c_fc.bias"), std::size_t(ff), h);
    std::copy(fc_bias.begin() + fc.bias_begin, fc_bias.begin() + fc.bias_end, &host[b.fc_b]);
    copy_slice(full_tensor(seed, block_name(l, "c_proj.weight"), std::size_t(h) * ff, ff), ff, proj, &host[b.proj_w]);
    const std::vector<float> proj_bias = full_tensor(seed, block_name(l, "c_proj.bias"), std::size_t(h), ff);
    std::copy(proj_bias.begin(), proj_bias.end(), &host[b.proj_b]);
  }
  copy_bytes(params_.data(), host.data(), host.size() * sizeof(float));
}

ex::TpLinear TpMlp::fc(int slot, bool with_grads) {
  const Block& b = blocks_[std::size_t(slot)];
  float* p = params_.as<float>();
  float* g = grads_.as<float>();
  return {p + b.fc_w,    p + b.fc_b, with_grads ? g + b.fc_w : nullptr, with_grads ? g + b.fc_b : nullptr,
          shape_.hidden, ff_local_};
}

ex::TpLinear TpMlp::proj(int slot) {
  const Block& b = blocks_[std::size_t(slot)];
  float* p = params_.as<float>();
  float* g = grads_.as<float>();
  // The ranks whose row_parallel_slice holds the bias add it (rank 0 only, as the g
  // all-reduce sums the T partial outputs); every rank gets the whole dL/db.
  return {p + b.proj_w, proj_adds_bias_ ? p + b.proj_b : nullptr, g + b.proj_w, g + b.proj_b, ff_local_, shape_.hidden};
}

// x_{l+1} = x_l + c_proj(GELU(c_fc(x_l))) for the held blocks (layer_stack: no x_l, and a GELU
// of c_proj's output but after the last block).
const float* TpMlp::forward(const float* x, TpMlpActivations& acts) {
  const int R = acts.rows, n = last_ - first_ + 1;
  const std::size_t local = std::size_t(local_rows(R)) * std::size_t(shape_.hidden);
  copy_bytes(acts.x[0].data(), x, local * sizeof(float));
  for (int i = 0; i < n; ++i) {
    const std::size_t k = std::size_t(i);
    ScopedSpan span = block_span(fwd_labels_[k]);
    float* next = i + 1 < n ? acts.x[k + 1].as<float>() : acts.out.as<float>();
    const bool gelu_after = shape_.gelu_after(first_ + i);
    float* out = gelu_after ? acts.p[k].as<float>() : next;  // c_proj's output
    const ex::TpLinear c = fc(i, false), p = proj(i);
    if (plain())
      math_.forward(acts.x[k].as<float>(), c.weight, c.bias, acts.z[k].as<float>(), R, c.in, c.out);
    else
      ex::column_parallel_forward(tp_, math_, c, acts.x[k].as<float>(), x_full(), acts.z[k].as<float>(), R);
    ops_.gelu_forward(acts.z[k].as<float>(), acts.a[k].as<float>(), std::size_t(R) * std::size_t(ff_local_));
    if (plain())
      math_.forward(acts.a[k].as<float>(), p.weight, p.bias, out, R, p.in, p.out);
    else
      ex::row_parallel_forward(tp_, math_, p, acts.a[k].as<float>(), partial_.as<float>(), out, R);
    if (gelu_after) ops_.gelu_forward(out, next, local);
    if (shape_.form == TpMlpForm::residual_blocks) ops_.axpy(1.0f, acts.x[k].as<float>(), next, local);  // the residual
  }
  ops_.synchronize();
  return acts.out.as<float>();
}

const float* TpMlp::backward(const float* dy, TpMlpActivations& acts, bool accumulate) {
  const int R = acts.rows, h = shape_.hidden;
  const std::size_t local = std::size_t(local_rows(R)) * std::size_t(h), ff = std::size_t(R) * std::size_t(ff_local_);
  if (dy != dnext_.as<float>()) copy_bytes(dnext_.data(), dy, local * sizeof(float));
  for (int i = last_ - first_; i >= 0; --i) {  // dnext holds dL/dx_{l+1}
    const std::size_t k = std::size_t(i);
    ScopedSpan span = block_span(bwd_labels_[k]);
    const ex::TpLinear c = fc(i, true), p = proj(i);
    float* dout = dnext_.as<float>();  // dL/d(c_proj's output)
    if (shape_.gelu_after(first_ + i)) {
      ops_.gelu_backward(acts.p[k].as<float>(), dnext_.as<float>(), dpre_.as<float>(), local);
      dout = dpre_.as<float>();
    }
    if (plain())
      math_.backward(acts.a[k].as<float>(), p.weight, dout, da_.as<float>(), p.weight_grad, p.bias_grad, R, p.in, p.out,
                     accumulate);
    else
      ex::row_parallel_backward(tp_, math_, p, acts.a[k].as<float>(), dout, dy_full_.as<float>(), da_.as<float>(), R,
                                accumulate);
    ops_.gelu_backward(acts.z[k].as<float>(), da_.as<float>(), dz_.as<float>(), ff);
    if (plain()) {
      math_.backward(acts.x[k].as<float>(), c.weight, dz_.as<float>(), dres_.as<float>(), c.weight_grad, c.bias_grad, R,
                     c.in, c.out, accumulate);
    } else {
      // c_fc's input again: the residual input itself, or (sequence parallel) gathered anew.
      const float* x_in = ex::f_forward(tp_, acts.x[k].as<float>(), x_full(), std::size_t(R) * std::size_t(h));
      ex::column_parallel_backward(tp_, math_, c, x_in, dz_.as<float>(), dx_full_.as<float>(), dres_.as<float>(), R,
                                   accumulate);
    }
    if (shape_.form == TpMlpForm::residual_blocks)
      ops_.axpy(1.0f, dres_.as<float>(), dnext_.as<float>(), local);  // dL/dx_l = dL/dx_{l+1} + the block's
    else
      std::swap(dres_, dnext_);  // dL/dx_l is the block's alone
  }
  ops_.synchronize();
  return dnext_.as<float>();
}

float TpMlp::forward_backward(const float* x, const float* target) {
  if (own_.rows == 0) own_ = make_activations(shape_.rows);
  const std::size_t local = std::size_t(local_rows()) * std::size_t(shape_.hidden);
  const float* y = forward(x, own_);
  // Loss: the mean over all R·h elements; a rank under sequence parallelism sees 1/T of them.
  float loss = ops_.mse_loss(y, target, dnext_.as<float>(), local);
  if (tp_.mode == ex::TpMode::sequence_parallel) {
    ops_.scale(1.0f / float(T_), dnext_.as<float>(), local);  // dy = 2(y − t)/(R·h), not /(R·h/T)
    float sum = loss / float(T_);
    tp_.comm.all_reduce(&sum, &sum, 1, DType::f32, ReduceOp::sum);
    loss = sum;
  }
  backward(dnext_.as<float>(), own_, false);
  return loss;
}

void TpMlp::make_optimizer_state() {
  if (adam_m_.numel() != 0) return;
  adam_m_ = Tensor(mem_, {std::int64_t(params_.numel())}, DType::f32, MemTag::optimizer, ops_.device());
  adam_v_ = Tensor(mem_, {std::int64_t(params_.numel())}, DType::f32, MemTag::optimizer, ops_.device());
}

void TpMlp::adamw_step(const kernels::AdamWConfig& c, int step) {
  make_optimizer_state();
  ops_.adamw_step(params_.as<float>(), grads_.as<float>(), adam_m_.as<float>(), adam_v_.as<float>(), params_.numel(), c,
                  step);
  ops_.synchronize();
}

namespace {

// A block's four tensors, in names()' order: what each is, and its name in the checkpoint.
enum class MlpTensor { fc_weight, fc_bias, proj_weight, proj_bias };
constexpr std::pair<MlpTensor, const char*> kBlockTensors[] = {{MlpTensor::fc_weight, "c_fc.weight"},
                                                               {MlpTensor::fc_bias, "c_fc.bias"},
                                                               {MlpTensor::proj_weight, "c_proj.weight"},
                                                               {MlpTensor::proj_bias, "c_proj.bias"}};
constexpr std::size_t kTensorsPerBlock = std::size(kBlockTensors);

}  // namespace

std::vector<std::string> tp_mlp_names(int first, int last) {
  std::vector<std::string> n;
  for (int l = first; l <= last; ++l)
    for (const auto& [which, tensor] : kBlockTensors) n.push_back(block_name(l, tensor));
  return n;
}

std::vector<std::string> TpMlp::names() const { return tp_mlp_names(first_, last_); }

// All-gathers the ranks' slices of one tensor and puts them back into the full layout.
std::vector<float> TpMlp::gather(const std::string& name, const float* flat) {
  const int h = shape_.hidden, ff = shape_.ff();
  // Which tensor: the name's place in names() gives its block and its kind (no parsing of it).
  const std::vector<std::string> all_names = names();
  const auto at = std::find(all_names.begin(), all_names.end(), name);
  if (at == all_names.end())
    throw Error("TpMlp (blocks " + std::to_string(first_) + ".." + std::to_string(last_) + ") has no tensor " + name);
  const std::size_t index = std::size_t(at - all_names.begin());
  const Block& b = blocks_[index / kTensorsPerBlock];
  const MlpTensor which = kBlockTensors[index % kTensorsPerBlock].first;
  const bool is_fc = which == MlpTensor::fc_weight || which == MlpTensor::fc_bias;
  const bool is_weight = which == MlpTensor::fc_weight || which == MlpTensor::proj_weight;
  if (which == MlpTensor::proj_bias) {  // the same on every rank
    std::vector<float> v(static_cast<std::size_t>(h));
    copy_bytes(v.data(), flat + b.proj_b, v.size() * sizeof(float));
    return v;
  }
  const std::size_t n = is_weight ? std::size_t(ff_local_) * h : std::size_t(ff_local_);
  std::vector<float> mine(n), all(n * std::size_t(T_));
  copy_bytes(mine.data(), flat + (is_fc ? (is_weight ? b.fc_w : b.fc_b) : b.proj_w), n * sizeof(float));
  tp_.comm.all_gather(mine.data(), all.data(), n, DType::f32);
  if (is_fc) return all;  // column slices are consecutive rows: concatenation is the full tensor
  std::vector<float> full(static_cast<std::size_t>(h) * std::size_t(ff));  // c_proj.weight: rank r's columns r·ff/T..
  for (int r = 0; r < T_; ++r)
    for (int row = 0; row < h; ++row)
      for (int c = 0; c < ff_local_; ++c)
        full[std::size_t(row) * ff + std::size_t(r * ff_local_ + c)] =
            all[std::size_t(r) * n + std::size_t(row) * ff_local_ + std::size_t(c)];
  return full;
}

std::vector<float> TpMlp::full_params(const std::string& name) { return gather(name, params_.as<float>()); }
std::vector<float> TpMlp::full_grads(const std::string& name) { return gather(name, grads_.as<float>()); }

}  // namespace dtl
