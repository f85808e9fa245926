// The MLP without its own flat buffers (MlpStorage, what ZeRO builds on): parameters read
// from and gradients written to buffers bound layer by layer, and the initial parameters
// delivered piece by piece. Held to the model that owns its buffers, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "labs/train/data.h"
#include "labs/train/mlp.h"

using namespace dtl;

namespace {

std::size_t differing_bytes(const void* a, const void* b, std::size_t bytes) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < bytes; ++i) n += static_cast<const char*>(a)[i] != static_cast<const char*>(b)[i];
  return n;
}

}  // namespace

TEST(MlpStorage, InitialParamsPiecesEqualTheOwnedBuffer) {
  for (DType t : {DType::f32, DType::bf16}) {
    MemoryTracker mem(0, nullptr);
    const MlpShape shape{5, 7, 3, 4};
    Mlp owner(shape, mem, 11, t);
    Mlp bare(shape, mem, 11, t, Device::cpu(), {}, {false, false});
    const std::size_t n = owner.num_params(), es = dtype_size(t);
    // Three uneven pieces, out of order, one crossing a layer boundary.
    std::vector<std::byte> got(n * es);
    const std::size_t a = n / 3, b = n / 3 + 17;
    bare.initial_params({{{b, n}, got.data() + b * es}, {{0, a}, got.data()}, {{a, b}, got.data() + a * es}});
    EXPECT_EQ(differing_bytes(got.data(), owner.param_data(), n * es), 0u) << dtype_name(t);
    EXPECT_THROW(bare.param_data(), Error);
    EXPECT_THROW(bare.grad_data(), Error);
  }
}

TEST(MlpStorage, BoundLayersTrainLikeTheOwnedModel) {
  for (DType t : {DType::f32, DType::bf16}) {
    MemoryTracker mem(0, nullptr);
    const MlpShape shape{6, 9, 4, 3};
    const int batch = 5;
    Mlp owner(shape, mem, 3, t);
    Mlp bare(shape, mem, 3, t, Device::cpu(), {}, {false, false});
    const std::size_t n = owner.num_params(), es = dtype_size(t);
    // The bare model's parameters and gradients live in buffers of ours, bound per layer.
    std::vector<std::byte> params(n * es), grads(n * es);
    bare.initial_params({{{0, n}, params.data()}});
    for (int l = 0; l < shape.layers; ++l) {
      const Range r = bare.layout().layer_range(l);
      bare.bind_layer_params(l, params.data() + r.begin * es);
      bare.bind_layer_grads(l, grads.data() + r.begin * es);
    }
    const Dataset data = make_teacher_data(shape, batch, 5);
    const float* y_owner = owner.forward(data.x_row(0), batch);
    std::vector<float> y1(y_owner, y_owner + std::size_t(batch) * std::size_t(shape.out));
    const float* y_bare = bare.forward(data.x_row(0), batch);
    EXPECT_EQ(differing_bytes(y1.data(), y_bare, y1.size() * 4), 0u) << dtype_name(t) << ": forward";
    std::vector<float> dy(y1.size(), 0.25f);
    owner.backward(dy.data(), false);
    bare.backward(dy.data(), false);
    EXPECT_EQ(differing_bytes(owner.grad_data(), grads.data(), n * es), 0u) << dtype_name(t) << ": gradients";
    // Unbinding a layer makes its next use an error that names it, never a wild read.
    bare.bind_layer_params(1, nullptr);
    try {
      bare.forward(data.x_row(0), batch);
      ADD_FAILURE() << "a forward through an unbound layer ran";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("layer 1"), std::string::npos) << e.what(); }
  }
}

TEST(MlpSplitBackward, InputThenWeightEqualsTheWholeBackwardBitForBit) {
  // Zero-bubble's B and W, on a stage that holds layers 1..2 of 4 (so dX of its first layer
  // is what it would send back) and on the last stage (whose last layer has no GELU).
  for (LayerSpan span : {LayerSpan{1, 2}, LayerSpan{2, 3}}) {
    MemoryTracker mem(0, nullptr);
    const MlpShape shape{6, 9, 4, 4};
    const int batch = 5, in = span.first == 0 ? shape.in : shape.width;
    const int out = span.last == shape.layers - 1 ? shape.out : shape.width;
    Mlp whole(shape, mem, 8, DType::f32, Device::cpu(), span);
    Mlp split(shape, mem, 8, DType::f32, Device::cpu(), span);
    std::vector<float> x(std::size_t(batch) * std::size_t(in)), dy(std::size_t(batch) * std::size_t(out));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.3 * double(i)));
    for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = float(std::cos(0.7 * double(i))) * 0.1f;
    Activations a = whole.make_activations(batch), b = split.make_activations(batch);
    whole.forward(x.data(), a);
    split.forward(x.data(), b);
    const float* dx_whole = whole.backward(dy.data(), a, false, {}, true);
    std::vector<float> dx1(dx_whole, dx_whole + x.size());
    const float* dx_split = split.backward_input(dy.data(), b, {}, true);
    EXPECT_EQ(differing_bytes(dx1.data(), dx_split, dx1.size() * 4), 0u) << "B: the input gradient";
    split.backward_weight(b, false);
    EXPECT_EQ(differing_bytes(whole.grad_data(), split.grad_data(), whole.num_params() * 4), 0u)
        << "W: the weight gradients";
  }
  MemoryTracker mem(0, nullptr);
  Mlp bf16({6, 9, 4, 2}, mem, 8, DType::bf16);
  Activations a = bf16.make_activations(2);
  EXPECT_THROW(bf16.backward_input(nullptr, a), UsageError) << "fp32 only";
}
