// The training substrate (labs/train): the parameter layout and its shards, the MLP run
// layer by layer and stage by stage, its hooks, the first layer's input gradient, and the
// optimizers over ranges. Each is held to an independent reference: the whole-model run
// (bit for bit), finite differences, or a float64 re-implementation written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/train/data.h"
#include "labs/train/mlp.h"
#include "labs/train/optimizer.h"

using namespace dtl;

namespace {

// Bytes of `n` elements of t from a and b that differ; prints the first.
std::size_t differing(const void* a, const void* b, std::size_t n, DType t) {
  const std::size_t es = dtype_size(t);
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(static_cast<const char*>(a) + i * es, static_cast<const char*>(b) + i * es, es) != 0) {
      if (count == 0) ADD_FAILURE() << "first differing element: " << i;
      ++count;
    }
  return count;
}

// The loss's gradient for targets 0.3 (a plain quadratic, so it is known exactly).
std::vector<float> quadratic_dy(const float* y, std::size_t n) {
  std::vector<float> dy(n);
  for (std::size_t i = 0; i < n; ++i) dy[i] = float(2.0 * (double(y[i]) - 0.3) / double(n));
  return dy;
}

}  // namespace

TEST(ParamLayout, ShardsTileTheBufferWithPaddingAtTheEnd) {
  // chunk = ceil(n / world); rank r owns [r·chunk, (r+1)·chunk) clipped to n.
  struct Case {
    std::size_t n;
    int world;
    std::vector<Range> expect;
    std::size_t padding;
  };
  const std::vector<Case> cases = {
      {12, 3, {{0, 4}, {4, 8}, {8, 12}}, 0},
      {10, 4, {{0, 3}, {3, 6}, {6, 9}, {9, 10}}, 2},
      {5, 4, {{0, 2}, {2, 4}, {4, 5}, {5, 5}}, 3},
      {3, 1, {{0, 3}}, 0},
  };
  for (const Case& c : cases)
    for (int r = 0; r < c.world; ++r) {
      const Shard s = shard_of(c.n, r, c.world);
      EXPECT_EQ(s.range, c.expect[std::size_t(r)]) << "n=" << c.n << " world=" << c.world << " rank " << r << ": ["
                                                   << s.range.begin << ", " << s.range.end << ")";
      EXPECT_EQ(s.padding, c.padding) << "n=" << c.n << " world=" << c.world;
      EXPECT_EQ(s.padded_numel(), c.n + c.padding);
      EXPECT_EQ(s.range.size() + s.own_padding(), s.chunk);
    }
  EXPECT_THROW(shard_of(10, 4, 4), UsageError);
  EXPECT_THROW(shard_of(10, 0, 0), UsageError);
}

TEST(ParamLayout, NamedTensorsPerLayerAndWhatARangeHolds) {
  MemoryTracker mem(0, nullptr);
  Mlp model({5, 7, 3, 3}, mem, 1);
  const ParamLayout& L = model.layout();
  ASSERT_EQ(L.tensors().size(), 6u);
  EXPECT_EQ(L.tensor(1, "weight").shape, (std::vector<std::int64_t>{7, 7}));
  EXPECT_EQ(L.tensor(2, "bias").range, (Range{5 * 7 + 7 + 7 * 7 + 7 + 3 * 7, 5 * 7 + 7 + 7 * 7 + 7 + 3 * 7 + 3}));
  EXPECT_EQ(L.numel(), model.num_params());
  EXPECT_EQ(L.layers_range(0, 2), (Range{0, L.numel()}));
  // Rank 1 of 2: what its shard holds, tensor by tensor.
  const Range shard = L.shard(1, 2).range;
  std::size_t covered = 0;
  for (const ParamTensor& t : L.tensors_in(shard)) covered += t.range.size();
  EXPECT_EQ(covered, shard.size());
  EXPECT_EQ(L.tensors_in(shard).front().name, "weight");
  EXPECT_EQ(L.tensors_in(shard).front().layer, 1);  // 53 elements: layer 0 is 42, layer 1 starts there
}

TEST(Mlp, BackwardMatchesFiniteDifferences) {
  MemoryTracker mem(0, nullptr);
  const MlpShape shape{5, 7, 3, 3};
  Mlp model(shape, mem, 3);
  const Dataset data = make_teacher_data(shape, 4, 11);
  auto loss_at = [&]() {
    const float* y = model.forward(data.x.data(), 4);
    double l = 0;
    for (std::size_t i = 0; i < 12; ++i) l += (double(y[i]) - 0.3) * (double(y[i]) - 0.3);
    return l / 12.0;
  };
  const std::vector<float> dy = quadratic_dy(model.forward(data.x.data(), 4), 12);
  model.backward(dy.data(), false);
  const std::vector<float> analytic(model.grads(), model.grads() + model.num_params());
  double worst = 0, scale = 1e-12;
  for (std::size_t i = 0; i < model.num_params(); i += 3) {
    const float keep = model.params()[i], h = 1e-2f;
    model.params()[i] = keep + h;
    const double up = loss_at();
    model.params()[i] = keep - h;
    const double down = loss_at();
    model.params()[i] = keep;
    worst = std::max(worst, std::fabs((up - down) / (2.0 * h) - analytic[i]));
    scale = std::max(scale, std::fabs(double(analytic[i])));
  }
  EXPECT_LT(worst / scale, 2e-3) << "largest difference " << worst << " (scale " << scale << ")";
}

TEST(Mlp, HooksFireInTheDocumentedOrder) {
  MemoryTracker mem(0, nullptr);
  Mlp model({4, 6, 2, 3}, mem, 1);
  const Dataset data = make_teacher_data(model.shape(), 2, 5);
  std::vector<std::string> seen;
  LayerHooks hooks;
  hooks.before_forward = [&](int l) { seen.push_back("bf" + std::to_string(l)); };
  hooks.after_forward = [&](int l) { seen.push_back("af" + std::to_string(l)); };
  hooks.before_backward = [&](int l) { seen.push_back("bb" + std::to_string(l)); };
  hooks.after_backward = [&](int l) {
    // DDP launches a bucket here: layer l's gradients must already be final.
    const Range r = model.layout().layer_range(l);
    double norm = 0;
    for (std::size_t i = r.begin; i < r.end; ++i) norm += std::fabs(model.grads()[i]);
    EXPECT_GT(norm, 0.0) << "layer " << l << "'s gradients are not written when after_backward fires";
    seen.push_back("ab" + std::to_string(l));
  };
  const std::vector<float> dy = quadratic_dy(model.forward(data.x.data(), 2, hooks), 4);
  model.backward(dy.data(), false, hooks);
  const std::vector<std::string> expect = {"bf0", "af0", "bf1", "af1", "bf2", "af2",
                                           "bb2", "ab2", "bb1", "ab1", "bb0", "ab0"};
  EXPECT_EQ(seen, expect);
}

// A pipeline of stages (each holding only its layers) against the whole model, bit for bit:
// outputs, every gradient, and the input gradient the first stage returns.
void expect_stages_equal_whole(DType precision, const std::vector<LayerSpan>& stages) {
  const MlpShape shape{6, 10, 4, 5};
  const int batch = 3;
  const Dataset data = make_teacher_data(shape, batch, 9);
  MemoryTracker mem(0, nullptr);
  Mlp whole(shape, mem, 1, precision);
  const float* y_whole = whole.forward(data.x.data(), batch);
  const std::vector<float> out_whole(y_whole, y_whole + batch * shape.out);
  const std::vector<float> dy = quadratic_dy(y_whole, out_whole.size());
  const float* dx_whole = whole.backward(dy.data(), false, {}, /*input_grad=*/true);
  const std::vector<float> input_grad_whole(dx_whole, dx_whole + batch * shape.in);

  std::vector<std::unique_ptr<Mlp>> models;
  std::vector<Activations> acts;
  const float* h = data.x.data();
  std::vector<std::vector<float>> handoff;  // what each stage "sends" to the next
  for (const LayerSpan& span : stages) {
    models.push_back(std::make_unique<Mlp>(shape, mem, 1, precision, Device::cpu(), span));
    acts.push_back(models.back()->make_activations(batch));
    const float* y = models.back()->forward(h, acts.back());
    handoff.emplace_back(
        y, y + std::size_t(batch) * std::size_t(models.back()->out_features(models.back()->last_layer())));
    h = handoff.back().data();
  }
  EXPECT_EQ(differing(h, out_whole.data(), out_whole.size(), DType::f32), 0u) << "stage outputs";
  std::vector<float> grad = dy;
  for (std::size_t s = stages.size(); s-- > 0;) {
    const float* dx = models[s]->backward(grad.data(), acts[s], false, {}, /*input_grad=*/true);
    grad.assign(dx, dx + std::size_t(batch) * std::size_t(models[s]->in_features(models[s]->first_layer())));
    const Range r = whole.layout().layers_range(models[s]->first_layer(), models[s]->last_layer());
    ASSERT_EQ(r.size(), models[s]->num_params());
    const std::size_t es = dtype_size(precision);
    EXPECT_EQ(differing(models[s]->param_data(), static_cast<const char*>(whole.param_data()) + r.begin * es, r.size(),
                        precision),
              0u)
        << "stage " << s << " parameters";
    EXPECT_EQ(differing(models[s]->grad_data(), static_cast<const char*>(whole.grad_data()) + r.begin * es, r.size(),
                        precision),
              0u)
        << "stage " << s << " gradients";
  }
  EXPECT_EQ(differing(grad.data(), input_grad_whole.data(), grad.size(), DType::f32), 0u) << "first stage's dX";
}

TEST(Mlp, StageByStageEqualsTheWholeModelBitForBit) {
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    expect_stages_equal_whole(t, {{0, 1}, {2, 4}});
    expect_stages_equal_whole(t, {{0, 0}, {1, 3}, {4, 4}});
    expect_stages_equal_whole(t, {{0, 4}});
  }
}

namespace {

double gelu64(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
double gelu64_grad(double x) {
  const double k = std::sqrt(2.0 / M_PI), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// dL/dx of the MLP in float64 from its fp32 parameters: an independent re-implementation.
std::vector<double> input_grad_float64(const Mlp& model, const float* x, const std::vector<float>& dy, int B) {
  const MlpShape& s = model.shape();
  std::vector<std::vector<double>> z(std::size_t(s.layers)), a(std::size_t(s.layers) + 1);
  a[0].assign(x, x + std::size_t(B) * std::size_t(s.in));
  for (int l = 0; l < s.layers; ++l) {
    const int I = model.in_features(l), O = model.out_features(l);
    const float* w = model.params() + model.layout().tensor(l, "weight").range.begin;
    const float* b = model.params() + model.layout().tensor(l, "bias").range.begin;
    z[std::size_t(l)].assign(std::size_t(B) * std::size_t(O), 0.0);
    for (int r = 0; r < B; ++r)
      for (int o = 0; o < O; ++o) {
        double acc = b[o];
        for (int i = 0; i < I; ++i) acc += a[std::size_t(l)][std::size_t(r * I + i)] * double(w[o * I + i]);
        z[std::size_t(l)][std::size_t(r * O + o)] = acc;
      }
    a[std::size_t(l) + 1] = z[std::size_t(l)];
    if (l < s.layers - 1)
      for (double& v : a[std::size_t(l) + 1]) v = gelu64(v);
  }
  std::vector<double> d(dy.begin(), dy.end());  // dL/d(output of layer l)
  for (int l = s.layers - 1; l >= 0; --l) {
    const int I = model.in_features(l), O = model.out_features(l);
    if (l < s.layers - 1)
      for (std::size_t k = 0; k < d.size(); ++k) d[k] *= gelu64_grad(z[std::size_t(l)][k]);
    const float* w = model.params() + model.layout().tensor(l, "weight").range.begin;
    std::vector<double> dx(std::size_t(B) * std::size_t(I), 0.0);
    for (int r = 0; r < B; ++r)
      for (int o = 0; o < O; ++o)
        for (int i = 0; i < I; ++i) dx[std::size_t(r * I + i)] += d[std::size_t(r * O + o)] * double(w[o * I + i]);
    d = std::move(dx);
  }
  return d;
}

}  // namespace

TEST(Mlp, FirstLayerInputGradientMatchesAFloat64Reference) {
  MemoryTracker mem(0, nullptr);
  Mlp model({6, 9, 4, 3}, mem, 2);
  const int B = 5;
  const Dataset data = make_teacher_data(model.shape(), B, 3);
  const std::vector<float> dy = quadratic_dy(model.forward(data.x.data(), B), std::size_t(B) * 4);
  const float* dx = model.backward(dy.data(), false, {}, /*input_grad=*/true);
  ASSERT_NE(dx, nullptr);
  const std::vector<double> ref = input_grad_float64(model, data.x.data(), dy, B);
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(double(dx[i]) - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  EXPECT_LT(worst / scale, 1e-5) << "largest difference " << worst << " (largest |dx| " << scale << ")";
  EXPECT_EQ(model.backward(dy.data(), false), nullptr) << "no input gradient unless asked for";
}

TEST(Mlp, OneLayerAtATimeEqualsTheWholePass) {
  MemoryTracker mem(0, nullptr);
  Mlp a({5, 8, 3, 4}, mem, 4), b({5, 8, 3, 4}, mem, 4);
  const int B = 3;
  const Dataset data = make_teacher_data(a.shape(), B, 1);
  const float* y = a.forward(data.x.data(), B);
  const std::vector<float> dy = quadratic_dy(y, std::size_t(B) * 3);
  a.backward(dy.data(), false);
  Activations acts = b.make_activations(B);
  const float* h = data.x.data();
  for (int l = 0; l < 4; ++l) h = b.forward_layer(l, h, acts);
  EXPECT_EQ(differing(h, y, dy.size(), DType::f32), 0u);
  std::vector<float> grad = dy, dx;
  for (int l = 3; l >= 0; --l) {
    dx.assign(std::size_t(B) * std::size_t(b.in_features(l)), 0.0f);
    b.backward_layer(l, grad.data(), acts, false, dx.data());
    grad = dx;
  }
  EXPECT_EQ(differing(a.grad_data(), b.grad_data(), a.num_params(), DType::f32), 0u);
}

namespace {

// K steps of an optimizer over the whole model, against one optimizer per shard (each
// updating only its range) on an identical model: the weights must agree bit for bit.
template <typename MakeOpt>
void expect_sharded_equals_whole(const MlpShape& shape, DType precision, int world, MakeOpt make) {
  MemoryTracker mem(0, nullptr);
  Mlp whole(shape, mem, 1, precision), sharded(shape, mem, 1, precision);
  auto whole_opt = make(whole_model(whole), mem);
  std::vector<decltype(whole_opt)> shard_opts;
  for (int r = 0; r < world; ++r)
    shard_opts.push_back(make(slice_of(sharded, sharded.layout().shard(r, world).range), mem));
  const Dataset data = make_teacher_data(shape, 4 * 3, 8);
  const std::size_t outputs = 4 * std::size_t(shape.out);
  for (int step = 0; step < 3; ++step)
    for (Mlp* m : {&whole, &sharded}) {
      std::vector<float> dy = quadratic_dy(m->forward(data.x_row(4 * step), 4), outputs);
      m->backward(dy.data(), false);
      if (m == &whole) {
        ASSERT_TRUE(whole_opt->step(whole_model(whole)));
      } else {
        for (int r = 0; r < world; ++r)
          ASSERT_TRUE(shard_opts[std::size_t(r)]->step(slice_of(sharded, sharded.layout().shard(r, world).range)));
      }
    }
  EXPECT_EQ(differing(whole.param_data(), sharded.param_data(), whole.num_params(), precision), 0u)
      << world << " shards, " << dtype_name(precision) << ", " << whole.num_params() << " parameters";
}

// Two shapes: 259 parameters (uneven over 2 and 3 ranks) and 93,916 (uneven over 3, and
// more than the optimizers' 64 Ki-element chunk, so a shard starts inside a chunk).
template <typename MakeOpt>
void expect_sharded_equals_whole(DType precision, int world, MakeOpt make) {
  for (const MlpShape shape : {MlpShape{5, 11, 3, 3}, MlpShape{5, 301, 4, 3}})
    expect_sharded_equals_whole(shape, precision, world, make);
}

}  // namespace

TEST(Optimizer, AdamWOverShardsEqualsWholeModelBitForBit) {
  const kernels::AdamWConfig cfg{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f};
  for (MasterWeights master : {MasterWeights::keep, MasterWeights::none})
    for (DType t : {DType::f32, DType::bf16, DType::f16})
      for (int world : {2, 3}) {
        if (t == DType::f32 && master == MasterWeights::none) continue;  // fp32 is its own master
        expect_sharded_equals_whole(t, world, [&](const ParamSlice& s, MemoryTracker& mem) {
          return std::make_unique<AdamW>(s, Device::cpu(), mem, cfg, master);
        });
      }
}

TEST(Optimizer, SgdOverShardsEqualsWholeModelBitForBit) {
  for (DType t : {DType::f32, DType::bf16})
    for (int world : {2, 3})
      expect_sharded_equals_whole(t, world, [&](const ParamSlice& s, MemoryTracker& mem) {
        return std::make_unique<Sgd>(s, Device::cpu(), mem, 0.05f);
      });
}

TEST(Optimizer, StateIsSizedToTheRangeAndTagged) {
  MemoryTracker whole_mem(0, nullptr), shard_mem(0, nullptr), model_mem(0, nullptr);
  Mlp model({5, 11, 3, 3}, model_mem, 1, DType::bf16);
  AdamW whole(whole_model(model), Device::cpu(), whole_mem, {});
  const Range shard = model.layout().shard(2, 3).range;
  AdamW part(slice_of(model, shard), Device::cpu(), shard_mem, {});
  // master, m and v: 12 bytes per parameter of the range (seed 004's K = 12), the master tagged apart
  EXPECT_EQ(whole_mem.peak(MemTag::optimizer), 8 * model.num_params());
  EXPECT_EQ(whole_mem.peak(MemTag::master), 4 * model.num_params());
  EXPECT_EQ(shard_mem.peak(MemTag::optimizer) + shard_mem.peak(MemTag::master), 12 * shard.size());
  MemoryTracker no_master_mem(0, nullptr);
  AdamW lean(whole_model(model), Device::cpu(), no_master_mem, {}, MasterWeights::none);
  EXPECT_EQ(no_master_mem.peak(MemTag::optimizer), 8 * model.num_params()) << "m and v only (seed 002's 2+2+8)";
  EXPECT_EQ(no_master_mem.peak(MemTag::master), 0u);
}

TEST(Optimizer, AnOverflowedF16StepChangesNothing) {
  MemoryTracker mem(0, nullptr);
  Mlp model({3, 4, 2, 2}, mem, 1, DType::f16);
  for (MasterWeights master : {MasterWeights::keep, MasterWeights::none}) {
    AdamW opt(whole_model(model), Device::cpu(), mem, {}, master);
    std::vector<float> grads(model.num_params(), 1.0f);
    grads[5] = INFINITY;
    from_float(grads.data(), model.grad_data(), DType::f16, grads.size());
    std::vector<char> before(static_cast<const char*>(model.param_data()),
                             static_cast<const char*>(model.param_data()) + 2 * model.num_params());
    EXPECT_FALSE(opt.step(whole_model(model), 1.0f / 65536));
    EXPECT_EQ(differing(before.data(), model.param_data(), model.num_params(), DType::f16), 0u);
    EXPECT_EQ(opt.steps_applied(), 0);
  }
}

TEST(Mlp, MemoryEstimateEqualsWhatIsAllocated) {
  for (DType t : {DType::f32, DType::bf16})
    for (const LayerSpan span : {LayerSpan{0, -1}, LayerSpan{1, 2}}) {
      MemoryTracker mem(0, nullptr);
      const MlpShape shape{6, 10, 4, 4};
      const int rows = 7;
      Mlp model(shape, mem, 1, t, Device::cpu(), span);
      const int in = model.in_features(model.first_layer()), out = model.out_features(model.last_layer());
      std::vector<float> x(std::size_t(rows) * std::size_t(in), 0.5f), dy(std::size_t(rows) * std::size_t(out), 0.1f);
      model.forward(x.data(), rows);
      model.backward(dy.data(), false, {}, true);
      const MlpMemory m = mlp_memory(shape, t, rows, span);
      EXPECT_EQ(double(mem.peak(MemTag::param)), m.params) << dtype_name(t);
      EXPECT_EQ(double(mem.peak(MemTag::grad)), m.grads) << dtype_name(t);
      EXPECT_EQ(double(mem.peak(MemTag::activation)), m.activations) << dtype_name(t);
      EXPECT_EQ(double(mem.peak(MemTag::other)), m.workspace) << dtype_name(t);
      EXPECT_EQ(double(mem.peak_total()), m.total()) << dtype_name(t);
      EXPECT_EQ(parameter_count(shape, span), model.num_params()) << dtype_name(t);
    }
}

TEST(Mlp, ParameterCountFromTheShape) {
  // 6→10→10→4: (6·10 + 10) + (10·10 + 10) + (10·4 + 4) = 70 + 110 + 44.
  EXPECT_EQ(parameter_count(MlpShape{6, 10, 4, 3}), 224u);
  EXPECT_EQ(parameter_count(MlpShape{6, 10, 4, 3}, LayerSpan{1, 1}), 110u);
}
