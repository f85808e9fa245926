// `dtlab bench-kernels`: how fast the training kernels run on one core (one rank's share),
// next to the ceilings measured in the same run:
//   GEMM-shaped kernels (linear forward/backward)  vs  a bare cblas_sgemm of the same size
//   memory-bound kernels (GELU, AdamW, axpy, ...)   vs  the best of memcpy, a copy loop and an
//                                                   in-place update, on prefaulted buffers
// and how much faster each fast path is than its float64 reference (kernels::reference).
//
//   dtlab bench-kernels [--batch 256] [--width 1024] [--elements 16M] [--device cpu|cuda] [--json out.json]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/util/files.h"
#include "core/util/units.h"
#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/kernels.h"
#include "labs/cli/commands.h"
#include "labs/cli/kernels_bench.h"
#include "labs/cli/validators.h"

namespace dtl::cli {

// Best of `repeats` runs after one untimed run (which also faults the pages in).
double best_seconds(int repeats, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

MemoryCeiling memory_ceiling(int repeats, const std::vector<float>& src, std::vector<float>& dst) {
  const std::size_t n = src.size();
  const double bytes2 = 2.0 * double(n) * sizeof(float);
  // Split over the CPU threads as the kernels are (cpu_threads.h; one in bench-kernels).
  auto split = [n](const std::function<void(std::size_t, std::size_t)>& part) {
    return [n, part] { kernels::parallel_for(n, 4096, part); };
  };
  const float* s = src.data();
  float* d = dst.data();
  MemoryCeiling c;
  c.memcpy_GBps = bytes2 / best_seconds(repeats, split([&](std::size_t a, std::size_t b) {
                                          std::memcpy(d + a, s + a, (b - a) * sizeof(float));
                                        })) *
                  1e-9;
  c.loop_GBps = bytes2 / best_seconds(repeats, split([&](std::size_t a, std::size_t b) {
                                        for (std::size_t i = a; i < b; ++i) d[i] = s[i];
                                      })) *
                1e-9;
  c.update_GBps = bytes2 / best_seconds(repeats, split([&](std::size_t a, std::size_t b) {
                                          for (std::size_t i = a; i < b; ++i) d[i] += 1.0f;
                                        })) *
                  1e-9;
  return c;
}

namespace {

struct KernelArgs : KernelBenchSizes {
  std::string elements_text = "16M";
  std::string device = "cpu";
};

std::vector<float> filled(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

using Row = KernelBenchRow;

// The memory-bound kernels over n elements, each beside the memory ceiling and its reference.
void memory_rows(const KernelArgs& a, std::vector<float>& src, std::vector<float>& dst, double copy_GBps,
                 std::vector<Row>& rows) {
  const std::size_t n = a.elements;
  auto memory_row = [&](const std::string& name, double bytes_per_element, const std::function<void()>& fast,
                        const std::function<void()>& ref) {
    const double fast_s = best_seconds(a.repeats, fast);
    const double ref_s = ref ? best_seconds(1, ref) : 0.0;
    rows.push_back(
        {name, "GB/s", bytes_per_element * double(n) / fast_s * 1e-9, copy_GBps, ref ? ref_s / fast_s : 0.0});
  };
  auto g = filled(n, 6), m = filled(n, 7), v = filled(n, 8);
  for (auto& x : v) x = std::fabs(x);
  const kernels::AdamWConfig adam{};
  memory_row(
      "gelu forward", 8, [&] { kernels::gelu_forward(src.data(), dst.data(), n); },
      [&] { kernels::reference::gelu_forward(src.data(), dst.data(), n); });
  memory_row(
      "gelu backward", 12, [&] { kernels::gelu_backward(src.data(), g.data(), dst.data(), n); },
      [&] { kernels::reference::gelu_backward(src.data(), g.data(), dst.data(), n); });
  memory_row(
      "mse loss + gradient", 12, [&] { kernels::mse_loss(src.data(), g.data(), dst.data(), n); },
      [&] { kernels::reference::mse_loss(src.data(), g.data(), dst.data(), n); });
  // AdamW reads w, g, m, v and writes w, m, v: 28 bytes per parameter.
  memory_row(
      "adamw (fp32)", 28, [&] { kernels::adamw_step(dst.data(), g.data(), m.data(), v.data(), n, adam, 1); },
      [&] { kernels::reference::adamw_step(dst.data(), g.data(), m.data(), v.data(), n, adam, 1); });
  std::vector<std::uint16_t> g16(n), w16(n);
  from_float(g.data(), g16.data(), DType::bf16, n);
  // Mixed: reads master, m, v (12 B) and bf16 g twice (4 B); writes master, m, v, bf16 w (14 B).
  memory_row(
      "adamw (bf16 grads, fp32 master)", 30,
      [&] {
        kernels::adamw_step_mixed(dst.data(), g16.data(), w16.data(), DType::bf16, m.data(), v.data(), n, adam, 1,
                                  1.0f);
      },
      nullptr);
  memory_row(
      "axpy  y += a*x", 12, [&] { kernels::axpy(0.5f, src.data(), dst.data(), n); }, nullptr);
  memory_row(
      "scale x *= a", 8, [&] { kernels::scale(0.999f, dst.data(), n); }, nullptr);
  memory_row(
      "reduce_into f32 (sum)", 12, [&] { reduce_into(dst.data(), src.data(), n, DType::f32, ReduceOp::sum); }, nullptr);
  memory_row(
      "reduce_into bf16 (sum)", 6, [&] { reduce_into(w16.data(), g16.data(), n, DType::bf16, ReduceOp::sum); },
      nullptr);
}

int run_kernel_bench(const KernelArgs& a) {
  kernels::use_one_blas_thread();
  const int B = a.batch, W = a.width;
  const double gemm_flops = 2.0 * B * W * W;
  // Ceilings: the bare BLAS call the linear kernels are built on, and memcpy.
  auto X = filled(std::size_t(B) * W, 1), Wt = filled(std::size_t(W) * W, 2),
       bias = filled(static_cast<std::size_t>(W), 3);
  std::vector<float> Y(std::size_t(B) * W), dX(std::size_t(B) * W), dW(std::size_t(W) * W),
      db(static_cast<std::size_t>(W));
  const double sgemm_s = best_seconds(a.repeats, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, W, W, 1.0f, X.data(), W, Wt.data(), W, 0.0f, Y.data(), W);
  });
  const double blas = gemm_flops / sgemm_s * 1e-9;
  auto src = filled(a.elements, 4), dst = filled(a.elements, 5);
  const MemoryCeiling mem = memory_ceiling(a.repeats, src, dst);

  std::vector<Row> rows;
  auto gemm_row = [&](const std::string& name, double flops, const std::function<void()>& fast,
                      const std::function<void()>& ref) {
    const double fast_s = best_seconds(a.repeats, fast), ref_s = best_seconds(1, ref);
    rows.push_back({name, "GFLOP/s", flops / fast_s * 1e-9, blas, ref_s / fast_s});
  };
  gemm_row(
      "linear forward  Y = X*W^T + b", gemm_flops,
      [&] { kernels::linear_forward(X.data(), Wt.data(), bias.data(), Y.data(), B, W, W); },
      [&] { kernels::reference::linear_forward(X.data(), Wt.data(), bias.data(), Y.data(), B, W, W); });
  gemm_row(
      "linear backward dX, dW, db", 2 * gemm_flops,
      [&] { kernels::linear_backward(X.data(), Wt.data(), Y.data(), dX.data(), dW.data(), db.data(), B, W, W); },
      [&] {
        kernels::reference::linear_backward(X.data(), Wt.data(), Y.data(), dX.data(), dW.data(), db.data(), B, W, W);
      });
  // The fused layer against its two unfused ops, both the best of --repeats (the "vs
  // reference" column: unfused time / fused time).
  std::vector<float> act(Y.size());
  const double fused_s = best_seconds(a.repeats, [&] {
    kernels::linear_gelu_forward(X.data(), Wt.data(), bias.data(), Y.data(), act.data(), B, W, W);
  });
  const double unfused_s = best_seconds(a.repeats, [&] {
    kernels::linear_forward(X.data(), Wt.data(), bias.data(), Y.data(), B, W, W);
    kernels::gelu_forward(Y.data(), act.data(), Y.size());
  });
  rows.push_back(
      {"linear + GELU fused (vs the 2 ops)", "GFLOP/s", gemm_flops / fused_s * 1e-9, blas, unfused_s / fused_s});
  memory_rows(a, src, dst, mem.best(), rows);

  char line1[160], line2[240];
  std::snprintf(line1, sizeof line1, "one core; GEMM %d x %d x %d; memory-bound kernels over %zu elements", B, W, W,
                a.elements);
  std::snprintf(
      line2, sizeof line2,
      "ceilings measured now: cblas_sgemm %.1f GFLOP/s; memory %.1f GB/s (read + write; memcpy %.1f, copy loop "
      "%.1f, in-place update %.1f)",
      blas, mem.best(), mem.memcpy_GBps, mem.loop_GBps, mem.update_GBps);
  print_kernel_bench(a, {line1, line2}, rows, blas, mem.best(), "cpu");
  return 0;
}

}  // namespace

void print_kernel_bench(const KernelBenchSizes& s, const std::vector<std::string>& headlines,
                        const std::vector<Row>& rows, double gemm_ceiling, double memory_ceiling,
                        const std::string& device) {
  for (const std::string& h : headlines) std::printf("# %s\n", h.c_str());
  std::printf("%-36s %10s %-8s %9s %14s\n", "kernel", "rate", "unit", "of ceiling", "vs reference");
  for (const Row& r : rows) {
    char ref[32] = "-";
    if (r.vs_reference > 0) std::snprintf(ref, sizeof ref, "%.2fx faster", r.vs_reference);
    std::printf("%-36s %10.2f %-8s %8.0f%% %14s\n", r.kernel.c_str(), r.rate, r.unit.c_str(), 100 * r.rate / r.ceiling,
                ref);
  }
  if (s.json_path.empty()) return;
  nlohmann::json j = {{"device", device},
                      {"batch", s.batch},
                      {"width", s.width},
                      {"elements", s.elements},
                      {"gemm_ceiling_GFLOPs", gemm_ceiling},
                      {"memory_GBps", memory_ceiling}};
  for (const Row& r : rows)
    j["kernels"].push_back({{"kernel", r.kernel},
                            {"rate", r.rate},
                            {"unit", r.unit},
                            {"ceiling", r.ceiling},
                            {"fraction_of_ceiling", r.rate / r.ceiling},
                            {"speedup_over_reference", r.vs_reference}});
  write_text_file(s.json_path, j.dump(2) + "\n", "--json");
}

Command add_kernels_bench_command(CLI::App& app) {
  auto a = std::make_shared<KernelArgs>();
  CLI::App* b = app.add_subcommand("bench-kernels", "Time the training kernels on one core next to sgemm and memcpy");
  b->add_option("--batch", a->batch, "Rows of the linear layer's input")
      ->check(whole_range(1, 1 << 20))
      ->capture_default_str();
  b->add_option("--width", a->width, "Input and output width of the linear layer")
      ->check(whole_range(1, 1 << 16))
      ->capture_default_str();
  b->add_option("--elements", a->elements_text, "Elements for the memory-bound kernels (K/M/G = powers of 1024)")
      ->capture_default_str();
  b->add_option("--device", a->device, "cpu (one core), or cuda (GPU 0)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  b->add_option("--repeats", a->repeats, "Timed runs per kernel (the best is kept)")
      ->check(whole_range(1, 10000))
      ->capture_default_str();
  b->add_option("--json", a->json_path, "Also write the results as JSON to this file");
  return [a] {
    a->elements = parse_size(a->elements_text, "--elements");
    if (a->elements < 1024)
      throw UsageError("--elements must be at least 1K so the memory-bound kernels leave the cache");
    // Six float arrays of --elements and the GEMM's three matrices (host memory, also for cuda).
    require_memory(6.0 * 4 * double(a->elements) + 4.0 * (2.0 * a->batch * a->width + double(a->width) * a->width),
                   "--elements, --batch or --width");
    if (a->batch < 1 || a->width < 1 || a->repeats < 1)
      throw UsageError("--batch, --width and --repeats must be positive");
    return a->device == "cuda" ? run_cuda_kernel_bench(*a) : run_kernel_bench(*a);
  };
}

}  // namespace dtl::cli
