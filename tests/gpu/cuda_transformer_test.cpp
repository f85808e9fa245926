// Label gpu: the GPT's CUDA kernels (kernels/cuda/transformer_kernels.cu) against their CPU
// twins (kernels/cpu/transformer_kernels.h) on random inputs of several shapes, and the
// whole GPT's forward+backward on the GPU against the same model on the CPU: the loss and
// every gradient. Each comparison prints its largest difference relative to the CPU
// tensor's scale (max|gpu − cpu| / max|cpu|). Skips, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/comm/threads_backend.h"
#include "kernels/cpu/transformer_kernels.h"
#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/kernels.h"
#include "labs/train/gpt.h"
#include "tests/gpu/device_buffer.h"
#include "tests/gpu/skip_without_gpu.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/labs/gpt_test_util.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

using test::DeviceBuffer;

using test::max_rel_error;
using test::random;

constexpr double kTol = 1e-5;  // fp32 against fp32: summation order only

using dtl::test::random_tokens;

class CudaTransformer : public ::testing::Test {
 protected:
  void SetUp() override {
    DTL_SKIP_WITHOUT_GPU();
    DTL_CUDA_CHECK(cudaSetDevice(0));
    DTL_CUBLAS_CHECK(cublasCreate(&blas_));
    // FP32 GEMMs at full precision (no TF32), so the comparison is with fp32 math.
    DTL_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH));
  }
  void TearDown() override {
    if (blas_) (void)cublasDestroy(blas_);
  }
  cublasHandle_t blas_ = nullptr;
};

std::string attention_name(const kernels::AttentionShape& s) {
  return "S=" + std::to_string(s.seq) + " B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) +
         " d=" + std::to_string(s.head_dim);
}

}  // namespace

TEST_F(CudaTransformer, LayerNormForwardAndBackwardMatchTheCpu) {
  // Widths below, at and above one block (256 threads), odd row counts.
  // {rows, width}: 4096 × 768 is GPT-2 small's, 64 chunks of the dw/db column sums.
  const int shapes[][2] = {{1, 32}, {37, 129}, {64, 256}, {5, 1000}, {300, 96}, {4096, 768}};
  const float eps = 1e-5f;
  unsigned seed = 1;
  for (const auto& shape : shapes) {
    const int rows = shape[0], width = shape[1];
    const std::size_t n = std::size_t(rows) * std::size_t(width), W = std::size_t(width), R = std::size_t(rows);
    const auto x = random(n, seed++, 2.0f), w = random(W, seed++), b = random(W, seed++), dy = random(n, seed++);
    // dx, dw and db start non-zero: the backward ADDS to them on both devices.
    const auto dx0 = random(n, seed++), dw0 = random(W, seed++), db0 = random(W, seed++);
    std::vector<float> y(n), mean(R), rstd(R), dx = dx0, dw = dw0, db = db0;
    kernels::layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, width, eps);
    kernels::layernorm_backward(x.data(), w.data(), mean.data(), rstd.data(), dy.data(), dx.data(), dw.data(),
                                db.data(), rows, width);

    DeviceBuffer<float> d_x(x), d_w(w), d_b(b), d_dy(dy), d_y(std::vector<float>(n, NAN)),
        d_mean(std::vector<float>(R, NAN)), d_rstd(std::vector<float>(R, NAN)), d_dx(dx0), d_dw(dw0), d_db(db0);
    cuda::layernorm_forward(d_x.ptr, d_w.ptr, d_b.ptr, d_y.ptr, d_mean.ptr, d_rstd.ptr, rows, width, eps, nullptr);
    cuda::layernorm_backward(d_x.ptr, d_w.ptr, d_mean.ptr, d_rstd.ptr, d_dy.ptr, d_dx.ptr, d_dw.ptr, d_db.ptr, rows,
                             width, nullptr);
    const double ey = max_rel_error(d_y.read(), y), em = max_rel_error(d_mean.read(), mean),
                 er = max_rel_error(d_rstd.read(), rstd), edx = max_rel_error(d_dx.read(), dx),
                 edw = max_rel_error(d_dw.read(), dw), edb = max_rel_error(d_db.read(), db);
    std::printf("layernorm %d×%d: y %.2e mean %.2e rstd %.2e | dx %.2e dw %.2e db %.2e\n", rows, width, ey, em, er, edx,
                edw, edb);
    EXPECT_LT(ey, kTol) << rows << "×" << width;
    EXPECT_LT(em, kTol) << rows << "×" << width;
    EXPECT_LT(er, kTol) << rows << "×" << width;
    EXPECT_LT(edx, kTol) << rows << "×" << width;
    EXPECT_LT(edw, kTol) << rows << "×" << width;
    EXPECT_LT(edb, kTol) << rows << "×" << width;
  }
}

TEST_F(CudaTransformer, AttentionForwardAndBackwardMatchTheCpu) {
  // heads > batch (batched over heads), batch > heads with heads > 1 (batched over the
  // batch, one softmax-backward launch per pair), one head, seq not a multiple of 32.
  const kernels::AttentionShape shapes[] = {{16, 2, 4, 8},  {37, 3, 2, 16}, {5, 1, 1, 4}, {33, 5, 2, 8},
                                            {70, 1, 3, 32}, {9, 4, 1, 8},   {1, 2, 2, 4}};
  unsigned seed = 100;
  for (const kernels::AttentionShape& s : shapes) {
    const std::size_t R = std::size_t(s.seq) * std::size_t(s.batch),
                      hd = std::size_t(s.heads) * std::size_t(s.head_dim);
    const std::size_t n_qkv = R * 3 * hd, n_out = R * hd,
                      n_probs = std::size_t(s.batch) * std::size_t(s.heads) * std::size_t(s.seq) * std::size_t(s.seq);
    const auto qkv = random(n_qkv, seed++), dout = random(n_out, seed++);
    std::vector<float> out(n_out), probs(n_probs), dqkv(n_qkv);
    kernels::attention_forward(qkv.data(), out.data(), probs.data(), s);
    kernels::attention_backward(qkv.data(), probs.data(), dout.data(), dqkv.data(), s);

    // Outputs start as NaN: every element must be written (dqkv is overwritten, not added to).
    DeviceBuffer<float> d_qkv(qkv), d_dout(dout), d_out(std::vector<float>(n_out, NAN)),
        d_probs(std::vector<float>(n_probs, NAN)), d_dqkv(std::vector<float>(n_qkv, NAN)),
        d_scratch(std::vector<float>(cuda::attention_backward_scratch_floats(s), NAN));
    cuda::attention_forward(blas_, d_qkv.ptr, d_out.ptr, d_probs.ptr, s, nullptr);
    cuda::attention_backward(blas_, d_qkv.ptr, d_probs.ptr, d_dout.ptr, d_dqkv.ptr, d_scratch.ptr, s, nullptr);
    const std::vector<float> got_probs = d_probs.read();
    const double eo = max_rel_error(d_out.read(), out), ep = max_rel_error(got_probs, probs),
                 eg = max_rel_error(d_dqkv.read(), dqkv);
    std::printf("attention %s: out %.2e probs %.2e | dqkv %.2e\n", attention_name(s).c_str(), eo, ep, eg);
    EXPECT_LT(eo, kTol) << attention_name(s);
    EXPECT_LT(ep, kTol) << attention_name(s);
    EXPECT_LT(eg, kTol) << attention_name(s);
    // The causal mask: exact zeros above the diagonal, as on the CPU.
    std::size_t nonzero_masked = 0;
    for (std::size_t pair = 0; pair < std::size_t(s.batch) * std::size_t(s.heads); ++pair)
      for (int i = 0; i < s.seq; ++i)
        for (int j = i + 1; j < s.seq; ++j)
          nonzero_masked +=
              got_probs[(pair * std::size_t(s.seq) + std::size_t(i)) * std::size_t(s.seq) + std::size_t(j)] != 0.0f;
    EXPECT_EQ(nonzero_masked, 0u) << attention_name(s);
  }
}

// The learned positions: the same bits as the CPU (the backward adds each position's rows
// in order), for B = 1 and for B sequences sharing a position.
TEST_F(CudaTransformer, PositionsMatchTheCpuBitForBit) {
  for (const int B : {1, 3, 8}) {
    const int positions = 37, rows = positions * B, width = 65;
    const auto table = random(std::size_t(positions) * width, 5), x0 = random(std::size_t(rows) * width, 6),
               dx = random(std::size_t(rows) * width, 7), dtable0 = random(table.size(), 8);
    std::vector<float> x = x0, dtable = dtable0;
    kernels::position_forward(table.data(), x.data(), rows, width, B);
    kernels::position_backward(dx.data(), dtable.data(), rows, width, B);
    DeviceBuffer<float> d_table(table), d_x(x0), d_dx(dx), d_dtable(dtable0);
    cuda::position_forward(d_table.ptr, d_x.ptr, rows, width, B, nullptr);
    cuda::position_backward(d_dx.ptr, d_dtable.ptr, rows, width, B, nullptr);
    EXPECT_EQ(d_x.read(), x) << "B " << B;
    EXPECT_EQ(d_dtable.read(), dtable) << "B " << B;
    std::printf("positions B=%d: forward %s, backward %s\n", B, d_x.read() == x ? "exact" : "DIFFERS",
                d_dtable.read() == dtable ? "exact" : "DIFFERS");
  }
}

TEST_F(CudaTransformer, EmbeddingForwardAndBackwardMatchTheCpuForEveryVocabSlice) {
  const int vocab = 50, rows = 41, width = 33;  // rows > vocab/2 in a slice: tokens repeat
  const auto tokens = random_tokens(rows, vocab, 7);
  const auto table_full = random(std::size_t(vocab) * width, 8), dout = random(std::size_t(rows) * width, 9);
  const int slices[][2] = {{0, 50}, {10, 15}, {40, 10}, {0, 25}, {25, 25}};  // {vocab_begin, vocab_local}
  DeviceBuffer<int> d_tokens(tokens);
  DeviceBuffer<float> d_dout(dout);
  DeviceBuffer<int> d_order(kernels::rows_by_token(tokens.data(), rows));
  for (const auto& slice : slices) {
    const int begin = slice[0], local = slice[1];
    const std::vector<float> table(table_full.begin() + std::ptrdiff_t(begin) * width,
                                   table_full.begin() + std::ptrdiff_t(begin + local) * width);
    const auto dtable0 = random(table.size(), 10u + unsigned(begin));  // the backward adds to it
    std::vector<float> out(std::size_t(rows) * width), dtable = dtable0;
    kernels::embedding_forward(tokens.data(), table.data(), begin, local, out.data(), rows, width);
    kernels::embedding_backward(tokens.data(), dout.data(), dtable.data(), begin, local, rows, width);

    DeviceBuffer<float> d_table(table), d_out(std::vector<float>(out.size(), NAN)), d_dtable(dtable0);
    cuda::embedding_forward(d_tokens.ptr, d_table.ptr, begin, local, d_out.ptr, rows, width, nullptr);
    cuda::embedding_backward(d_tokens.ptr, d_order.ptr, d_dout.ptr, d_dtable.ptr, begin, local, rows, width, nullptr);
    const std::vector<float> got_out = d_out.read();
    const std::vector<float> got_dtable = d_dtable.read();
    std::printf("embedding rows [%d, %d): out %s, dtable %s (largest difference %.2e)\n", begin, begin + local,
                got_out == out ? "exact" : "DIFFERS", got_dtable == dtable ? "exact" : "DIFFERS",
                max_rel_error(got_dtable, dtable));
    EXPECT_EQ(got_out, out) << "a gather is exact";
    EXPECT_EQ(got_dtable, dtable) << "each token's rows add in the CPU's row order: the same bits";
  }
}

// The whole GPT, one rank: forward_backward on the GPU against the CPU from the same seed.
// The GPU's GEMMs go through the thread's cuBLAS handle in its default math mode (fp32, no
// TF32 unless NVIDIA_TF32_OVERRIDE says otherwise), so ~1e-6 per op, compounding over layers.
// Bound: 5e-4 of each tensor's largest gradient. Measured on an H100 (2026-11-24): 1.5e-6 and
// 5.9e-6 for the two small shapes, 1.4e-4 for the 256-wide one (init std 0.3 saturates its
// softmaxes: loss 15.9 against ln 256 = 5.5, so fp32 reordering is amplified). A wrong index
// or a dropped term in a kernel moves a gradient by 1e-2 of its scale or more.
constexpr double kGptGradTol = 5e-4;
TEST(CudaGpt, ForwardBackwardMatchesTheCpuLossAndEveryGradient) {
  DTL_SKIP_WITHOUT_GPU();
  cuda::use_cuda_memory();
  const GptConfig configs[] = {
      {.vocab = 64, .seq = 16, .hidden = 32, .heads = 4, .layers = 2, .batch = 2},  // the lab's default
      {.vocab = 97, .seq = 37, .hidden = 48, .heads = 3, .layers = 3, .batch = 5},  // batch > heads, odd sizes
      {.vocab = 256, .seq = 128, .hidden = 256, .heads = 8, .layers = 2, .batch = 4},
  };
  for (const GptConfig& c : configs) {
    const std::vector<int> tokens = random_tokens(c.rows(), c.vocab, 1), targets = random_tokens(c.rows(), c.vocab, 2);
    struct Result {
      float loss = 0, loss_again = 0;
      std::vector<std::string> names;
      std::vector<std::vector<float>> grads;
    };
    const auto run = [&](Device device) {
      Result r;
      test::run_ranks(1, [&](Comm& comm) {
        MemoryTracker mem(0, nullptr);
        Gpt model(c, ex::TpGroup{comm}, mem, 7, device, GptInit{.std = 0.3f, .perturb_all = true});
        r.loss = model.forward_backward(tokens.data(), targets.data());
        for (const GptTensor& t : model.tensors()) {
          r.names.push_back(t.name);
          r.grads.push_back(model.full_tensor(t.name, GptBuffer::grads));
        }
        // A second step from the same weights: the gradients are zeroed and refilled.
        r.loss_again = model.forward_backward(tokens.data(), targets.data());
      });
      return r;
    };
    const Result cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
    ASSERT_EQ(cpu.names.size(), gpu.names.size());
    const double loss_diff = std::fabs(double(gpu.loss) - double(cpu.loss)) / std::fabs(double(cpu.loss));
    std::printf("gpt V=%d S=%d h=%d A=%d L=%d B=%d: loss cpu %.7g gpu %.7g (rel %.2e)\n", c.vocab, c.seq, c.hidden,
                c.heads, c.layers, c.batch, double(cpu.loss), double(gpu.loss), loss_diff);
    EXPECT_LT(loss_diff, 1e-5);
    EXPECT_EQ(gpu.loss_again, gpu.loss) << "the same step twice on the GPU";
    double worst = 0;
    std::string worst_name;
    for (std::size_t i = 0; i < cpu.names.size(); ++i) {
      const double e = max_rel_error(gpu.grads[i], cpu.grads[i]);
      if (e > worst) {
        worst = e;
        worst_name = cpu.names[i];
      }
      EXPECT_LT(e, kGptGradTol) << cpu.names[i];
    }
    std::printf("  largest gradient difference %.2e (%s) over %zu tensors\n", worst, worst_name.c_str(),
                cpu.names.size());
  }
}

// Mixed precision on the GPU (bf16 parameters and gradients, fp32 windows, fp32 master):
// the GPU's rounded gradients against the CPU's from the same seed. The two fp32 results
// differ by ~1e-6 before rounding, so a gradient may land one bf16 step (2^-8) apart.
TEST(CudaGpt, MixedPrecisionMatchesTheCpuWithinOneBf16Step) {
  DTL_SKIP_WITHOUT_GPU();
  cuda::use_cuda_memory();
  const GptConfig c{.vocab = 64, .seq = 16, .hidden = 32, .heads = 4, .layers = 2, .batch = 2};
  const std::vector<int> tokens = random_tokens(c.rows(), c.vocab, 1), targets = random_tokens(c.rows(), c.vocab, 2);
  const auto run = [&](Device device, std::vector<std::vector<float>>& grads) {
    float loss = 0;
    test::run_ranks(1, [&](Comm& comm) {
      MemoryTracker mem(0, nullptr);
      Gpt model(c, ex::TpGroup{comm}, mem, 7, device, GptInit{.std = 0.3f, .perturb_all = true}, DType::bf16);
      loss = model.forward_backward(tokens.data(), targets.data());
      for (const GptTensor& t : model.tensors()) grads.push_back(model.full_tensor(t.name, GptBuffer::grads));
    });
    return loss;
  };
  std::vector<std::vector<float>> cpu, gpu;
  const float cpu_loss = run(Device::cpu(), cpu), gpu_loss = run(Device::cuda(0), gpu);
  ASSERT_EQ(cpu.size(), gpu.size());
  double worst = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, max_rel_error(gpu[i], cpu[i]));
  std::printf("bf16 gpt: loss cpu %.7g gpu %.7g, largest gradient difference %.2e (bound 2^-7)\n", double(cpu_loss),
              double(gpu_loss), worst);
  EXPECT_LT(std::fabs(double(gpu_loss) - double(cpu_loss)), 1e-4);
  EXPECT_LT(worst, 1.0 / 128);
}
