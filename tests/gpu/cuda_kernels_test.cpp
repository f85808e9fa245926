// Label gpu: every CUDA kernel against its CPU twin, on the GPU of the machine running it.
// Reductions must match the CPU bit for bit (same widen-combine-round order); float
// kernels are held to the float64 references with the largest relative error printed.
// Built whenever CUDA is found; run by tests/gpu/run.sh on a machine with a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/kernels.h"
#include "tests/gpu/device_buffer.h"
#include "tests/gpu/skip_without_gpu.h"
#include "tests/kernels/kernel_test_util.h"

using namespace dtl;

namespace {

using test::DeviceBuffer;

using test::max_rel_error;
using test::random;

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    DTL_SKIP_WITHOUT_GPU();
    DTL_CUDA_CHECK(cudaSetDevice(0));
  }
};

}  // namespace

TEST_F(Cuda, ReduceIntoMatchesTheCpuBitForBitForEveryTypeAndOp) {
  const std::size_t n = 100003;  // not a multiple of the block size
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
      const std::size_t bytes = n * dtype_size(t);
      std::vector<unsigned char> a(bytes), b(bytes);
      const auto fa = random(n, 1), fb = random(n, 2);
      for (std::size_t i = 0; i < n; ++i) {  // values of each type from the same floats
        switch (t) {
          case DType::f32:
            reinterpret_cast<float*>(a.data())[i] = fa[i];
            reinterpret_cast<float*>(b.data())[i] = fb[i];
            break;
          case DType::f64:
            reinterpret_cast<double*>(a.data())[i] = fa[i];
            reinterpret_cast<double*>(b.data())[i] = fb[i];
            break;
          case DType::i32:
            reinterpret_cast<std::int32_t*>(a.data())[i] = std::int32_t(fa[i] * 1000);
            reinterpret_cast<std::int32_t*>(b.data())[i] = std::int32_t(fb[i] * 1000);
            break;
          case DType::i64:
            reinterpret_cast<std::int64_t*>(a.data())[i] = std::int64_t(fa[i] * 1e6);
            reinterpret_cast<std::int64_t*>(b.data())[i] = std::int64_t(fb[i] * 1e6);
            break;
          case DType::f16:
            reinterpret_cast<std::uint16_t*>(a.data())[i] = float_to_f16(fa[i]);
            reinterpret_cast<std::uint16_t*>(b.data())[i] = float_to_f16(fb[i]);
            break;
          case DType::bf16:
            reinterpret_cast<std::uint16_t*>(a.data())[i] = float_to_bf16(fa[i]);
            reinterpret_cast<std::uint16_t*>(b.data())[i] = float_to_bf16(fb[i]);
            break;
        }
      }
      DeviceBuffer<unsigned char> da(a), db(b);
      cuda::reduce_into(da.ptr, db.ptr, n, t, op, nullptr);
      cuda::finish_average(da.ptr, n, t, op, 2, nullptr);
      reduce_into(a.data(), b.data(), n, t, op);
      finish_average(a.data(), n, t, op, 2);
      const std::vector<unsigned char> got = da.read();
      std::size_t differing = 0;
      for (std::size_t i = 0; i < n; ++i)
        differing += std::memcmp(&got[i * dtype_size(t)], &a[i * dtype_size(t)], dtype_size(t)) != 0;
      EXPECT_EQ(differing, 0u) << dtype_name(t) << " " << reduce_op_name(op) << ": elements differing from the CPU";
    }
}

TEST_F(Cuda, ElementwiseKernelsMatchTheReferences) {
  const std::size_t n = 1 << 20;
  const auto x = random(n, 3), dy = random(n, 4);
  std::vector<float> y(n), dx(n), ry(n), rdx(n);
  DeviceBuffer<float> dx_in(x), d_dy(dy), d_y(y), d_dx(dx);
  cuda::gelu_forward(dx_in.ptr, d_y.ptr, n, nullptr);
  cuda::gelu_backward(dx_in.ptr, d_dy.ptr, d_dx.ptr, n, nullptr);
  kernels::reference::gelu_forward(x.data(), ry.data(), n);
  kernels::reference::gelu_backward(x.data(), dy.data(), rdx.data(), n);
  const double e_fwd = max_rel_error(d_y.read(), ry), e_bwd = max_rel_error(d_dx.read(), rdx);
  std::printf("gelu forward max rel error %.3g, backward %.3g\n", e_fwd, e_bwd);
  EXPECT_LT(e_fwd, 1e-6);
  EXPECT_LT(e_bwd, 1e-4);  // the reference is a finite difference

  auto yy = dy;
  DeviceBuffer<float> d_yy(yy);
  cuda::axpy(0.25f, dx_in.ptr, d_yy.ptr, n, nullptr);
  cuda::scale(-2.0f, d_yy.ptr, n, nullptr);
  kernels::axpy(0.25f, x.data(), yy.data(), n);
  kernels::scale(-2.0f, yy.data(), n);
  EXPECT_EQ(d_yy.read(), yy) << "axpy and scale are exact elementwise float operations";
}

TEST_F(Cuda, LossesMatchTheReferences) {
  const std::size_t n = 100000;
  const auto y = random(n, 20), t = random(n, 21);
  std::vector<float> dy(n), rdy(n);
  DeviceBuffer<float> d_y(y), d_t(t), d_dy(dy);
  const float loss = cuda::mse_loss(d_y.ptr, d_t.ptr, d_dy.ptr, n, nullptr);
  const float rloss = kernels::reference::mse_loss(y.data(), t.data(), rdy.data(), n);
  const double e = max_rel_error(d_dy.read(), rdy);
  std::printf("mse loss %.7g vs %.7g, gradient max rel error %.3g\n", loss, rloss, e);
  EXPECT_NEAR(loss, rloss, 1e-6 * rloss);
  EXPECT_LT(e, 1e-6);

  // Short rows (fewer classes than a block's threads) and a vocabulary-sized one.
  for (const auto& [B, C] : {std::pair{333, 17}, std::pair{24, 50257}}) {
    const auto z = random(std::size_t(B) * std::size_t(C), 22, 3.0f);
    std::vector<int> labels(static_cast<std::size_t>(B));
    for (int r = 0; r < B; ++r) labels[std::size_t(r)] = (r * 7919) % C;
    std::vector<float> dz(z.size()), rdz(z.size());
    DeviceBuffer<float> d_z(z), d_dz(dz);
    DeviceBuffer<int> d_labels(labels);
    const float ce = cuda::softmax_cross_entropy(d_z.ptr, d_labels.ptr, d_dz.ptr, B, C, nullptr);
    const float rce = kernels::reference::softmax_cross_entropy(z.data(), labels.data(), rdz.data(), B, C);
    const double ez = max_rel_error(d_dz.read(), rdz);
    std::printf("softmax cross-entropy %d x %d: %.7g vs %.7g, gradient max rel error %.3g\n", B, C, ce, rce, ez);
    EXPECT_NEAR(ce, rce, 1e-6 * rce);
    EXPECT_LT(ez, 1e-6);
  }

  auto w = y;
  DeviceBuffer<float> d_w(w);
  cuda::sgd_step(d_w.ptr, d_t.ptr, n, 0.125f, nullptr);
  kernels::sgd_step(w.data(), t.data(), n, 0.125f);
  EXPECT_EQ(d_w.read(), w) << "sgd is one exact multiply-add per element";
}

TEST_F(Cuda, AdamWMatchesTheReferenceInFp32AndMixedPrecision) {
  const std::size_t n = 300001;
  const kernels::AdamWConfig c{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f};
  auto w = random(n, 5), m = std::vector<float>(n, 0), v = std::vector<float>(n, 0);
  auto rw = w, rm = m, rv = v;
  DeviceBuffer<float> dw(w), dm(m), dv(v);
  for (int t = 1; t <= 5; ++t) {
    const auto g = random(n, 100u + unsigned(t));
    DeviceBuffer<float> dg(g);
    cuda::adamw_step(dw.ptr, dg.ptr, dm.ptr, dv.ptr, n, c, t, nullptr);
    kernels::reference::adamw_step(rw.data(), g.data(), rm.data(), rv.data(), n, c, t);
  }
  const double e = max_rel_error(dw.read(), rw);
  std::printf("adamw fp32 max rel error %.3g\n", e);
  EXPECT_LT(e, 1e-5);

  // Mixed: bf16 gradients scaled by 1024, fp32 master; the weights are the master rounded.
  auto master = random(n, 6), ref = master;
  std::vector<float> mm(n, 0), vv(n, 0), rmm(n, 0), rvv(n, 0);
  std::vector<std::uint16_t> params(n), grads(n);
  DeviceBuffer<float> d_master(master), d_m(mm), d_v(vv);
  DeviceBuffer<std::uint16_t> d_params(params);
  const auto g = random(n, 7, 1024.0f);
  from_float(g.data(), grads.data(), DType::bf16, n);
  std::vector<float> widened(n);
  to_float(grads.data(), DType::bf16, widened.data(), n);
  for (auto& x : widened) x /= 1024.0f;
  DeviceBuffer<std::uint16_t> d_grads(grads);
  ASSERT_TRUE(cuda::adamw_step_mixed(d_master.ptr, d_grads.ptr, d_params.ptr, DType::bf16, d_m.ptr, d_v.ptr, n, c, 1,
                                     1.0f / 1024.0f, nullptr));
  kernels::reference::adamw_step(ref.data(), widened.data(), rmm.data(), rvv.data(), n, c, 1);
  const std::vector<float> got_master = d_master.read();
  EXPECT_LT(max_rel_error(got_master, ref), 1e-5);
  const std::vector<std::uint16_t> got_params = d_params.read();
  for (std::size_t i = 0; i < n; i += 997) ASSERT_EQ(got_params[i], float_to_bf16(got_master[i])) << i;
  grads[12345] = float_to_bf16(INFINITY);  // overflow: skipped, nothing moves
  DeviceBuffer<std::uint16_t> d_bad(grads);
  EXPECT_FALSE(cuda::adamw_step_mixed(d_master.ptr, d_bad.ptr, d_params.ptr, DType::bf16, d_m.ptr, d_v.ptr, n, c, 2,
                                      1.0f / 1024.0f, nullptr));
  EXPECT_EQ(d_master.read(), got_master);
}

TEST_F(Cuda, LinearThroughCublasMatchesTheReference) {
  // Odd sizes: no layout mistake can hide; 37 rows are one chunk of the bias gradient's
  // column sums, 1000 rows 16 of them (the last one partial).
  for (const int B : {37, 1000}) {
    const int I = 129, O = 65;
    const auto X = random(std::size_t(B) * I, 8), W = random(std::size_t(O) * I, 9), b = random(std::size_t(O), 10),
               dY = random(std::size_t(B) * O, 11);
    std::vector<float> Y(std::size_t(B) * O), dX(std::size_t(B) * I), dW(std::size_t(O) * I, 0.5f),
        db(std::size_t(O), 0.5f);
    std::vector<float> rY = Y, rdX = dX, rdW(dW.size()), rdb(db.size());
    cublasHandle_t h = nullptr;
    DTL_CUBLAS_CHECK(cublasCreate(&h));
    // Pin FP32 GEMMs to full precision (no TF32) so the comparison is with fp32 math.
    DTL_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    DeviceBuffer<float> dXin(X), dWin(W), dbin(b), ddY(dY), dYout(Y), ddX(dX), ddW(dW), ddb(db);
    cuda::linear_forward(h, dXin.ptr, dWin.ptr, dbin.ptr, dYout.ptr, B, I, O, nullptr);
    cuda::linear_backward(h, dXin.ptr, dWin.ptr, ddY.ptr, ddX.ptr, ddW.ptr, ddb.ptr, B, I, O, /*accumulate=*/true,
                          nullptr);
    kernels::reference::linear_forward(X.data(), W.data(), b.data(), rY.data(), B, I, O);
    kernels::reference::linear_backward(X.data(), W.data(), dY.data(), rdX.data(), rdW.data(), rdb.data(), B, I, O);
    for (auto& x : rdW) x += 0.5f;  // accumulate onto the 0.5 already there
    for (auto& x : rdb) x += 0.5f;
    const double eY = max_rel_error(dYout.read(), rY), edX = max_rel_error(ddX.read(), rdX),
                 edW = max_rel_error(ddW.read(), rdW), edb = max_rel_error(ddb.read(), rdb);
    std::printf("linear max rel errors: Y %.3g, dX %.3g, dW %.3g, db %.3g\n", eY, edX, edW, edb);
    EXPECT_LT(eY, 1e-5);
    EXPECT_LT(edX, 1e-5);
    EXPECT_LT(edW, 1e-5);
    EXPECT_LT(edb, 1e-5);
    DTL_CUBLAS_CHECK(cublasDestroy(h));
  }
}
