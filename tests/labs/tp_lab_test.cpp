// The tensor-parallel lab (labs/tensor_parallel/): the equivalence table of the issue — the
// MLP and the GPT on T = 1, 2, 4 ranks, with and without sequence parallelism, against one
// rank (loss, every gradient, the weights after 3 AdamW steps) — the collectives per layer
// and their bytes, the activation memory, bad input; and the MLP's T = 1 model against a
// float64 reference written here (the GPT's has tests/labs/gpt_gradcheck_test.cpp).
#include "labs/tensor_parallel/tp_lab.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "labs/tensor_parallel/tp_mlp.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;
using dtl::test::row;

namespace {

Report run_tp(int T, std::map<std::string, std::string> options, Trace& trace) {
  options.emplace("steps", "3");
  return dtl::test::run_for_results("tensor_parallel", T, options, trace);
}

}  // namespace

TEST(TensorParallelLab, EveryModelAndDegreeEqualsOneRankWithAndWithoutSequenceParallelism) {
  for (const char* model : {"mlp", "gpt"})
    for (int T : {1, 2, 4}) {
      Trace trace(T);
      std::map<std::string, std::string> o = {{"model", model}, {"sequence-parallel", "both"}, {"seq", "8"}};
      if (std::string(model) == "gpt") o.insert({{"hidden", "32"}, {"heads", "4"}, {"vocab", "16"}});
      const Report rep = run_tp(T, o, trace);
      for (const char* mode : {"tp", "tp+sp"}) {
        const std::string n = std::string(mode) + ".";
        std::printf("%s T=%d %-5s |loss diff| %.2e  max grad diff (rel) %.2e  max weight diff %.2e\n", model, T, mode,
                    row(rep, n + "loss_vs_one_rank"), row(rep, n + "grad_diff_vs_one_rank"),
                    row(rep, n + "weight_diff_vs_one_rank"));
        EXPECT_LE(row(rep, n + "grad_diff_vs_one_rank"), 1e-4) << model << " T=" << T << " " << mode;
        EXPECT_LE(row(rep, n + "loss_vs_one_rank"), 1e-5) << model << " T=" << T << " " << mode;
      }
      EXPECT_TRUE(rep.ok) << model << " T=" << T << ":\n" << rep.to_text();
    }
}

// Issue 46: a deep, narrow GPT amplifies rounding through its layers (hidden 4: the gradients
// of 2 ranks and of 1 part by 1.25e-4 at 96 layers, past the fixed 1e-4 the lab used to
// allow, and 2.8e-3 at 192). The bound is 10 × the reference's own noise floor (every weight
// one ulp away); a shallow model keeps 1e-4.
TEST(TensorParallelLab, ADeepNarrowGptIsHeldToItsOwnNoiseFloor) {
  const std::map<std::string, std::string> deep = {{"model", "gpt"},
                                                   {"layers", "96"},
                                                   {"hidden", "4"},
                                                   {"heads", "2"},
                                                   {"seq", "32"},
                                                   {"steps", "1"},
                                                   {"sequence-parallel", "off"}};
  Trace trace(2), shallow_trace(2);
  const Report rep = run_tp(2, deep, trace);
  const ReportRow* grad = rep.find("tp.grad_diff_vs_one_rank");
  ASSERT_NE(grad, nullptr);
  ASSERT_TRUE(grad->tolerance.has_value());
  std::printf("96 layers of hidden 4: gradient diff %.3e, bound %.3e\n", grad->measured, *grad->tolerance);
  EXPECT_TRUE(rep.ok) << rep.to_text();
  EXPECT_GT(*grad->tolerance, 1e-4) << "the floor of so deep a model is above the shallow bound";
  EXPECT_LT(*grad->tolerance, 1e-2) << "the bound must still catch a real fault (O(1))";
  const Report shallow = run_tp(2, {{"model", "gpt"}, {"layers", "2"}, {"sequence-parallel", "off"}}, shallow_trace);
  EXPECT_EQ(shallow.find("tp.grad_diff_vs_one_rank")->tolerance, 1e-4) << "shallow models keep 1e-4";
}

TEST(TensorParallelLab, CollectivesPerLayerAndTheirBytesAreMegatrons) {
  Trace trace(2);
  const Report rep = run_tp(2, {{"model", "gpt"}, {"sequence-parallel", "both"}, {"layers", "3"}, {"seq", "8"}}, trace);
  // Plain: g after attention and after the MLP forward, f before each backward.
  EXPECT_EQ(row(rep, "tp.all_reduce_per_layer_fwd"), 2);
  EXPECT_EQ(row(rep, "tp.all_reduce_per_layer_bwd"), 2);
  const double bsh4 = 4.0 * 4 * 8 * 64;  // batch 4 × seq 8 × hidden 64 × 4 B
  EXPECT_EQ(row(rep, "tp.payload_per_collective"), bsh4);
  EXPECT_EQ(row(rep, "tp.fwd_all_reduces"), 6);  // 2L
  // Ring: 4L all-reduces of 2(T−1)/T·bsh·4 bytes each per rank.
  EXPECT_EQ(row(rep, "tp.ring_bytes_per_step"), 4 * 3 * bsh4);
  // Sequence parallel: all-gathers and reduce-scatters instead, and ln outputs gathered again.
  EXPECT_EQ(row(rep, "tp+sp.all_gather_per_layer_fwd"), 2);
  EXPECT_EQ(row(rep, "tp+sp.reduce_scatter_per_layer_fwd"), 2);
  EXPECT_EQ(row(rep, "tp+sp.reduce_scatter_per_layer_bwd"), 2);
  EXPECT_EQ(row(rep, "tp+sp.all_gather_per_layer_bwd"), 4);
  // Activation memory: what the tracker saw equals the model's formula, and sequence parallelism lowers it.
  for (const char* n : {"tp.activation_bytes", "tp+sp.activation_bytes"})
    EXPECT_EQ(row(rep, n), rep.find(n)->predicted) << n;
  EXPECT_LT(row(rep, "tp+sp.activation_bytes"), row(rep, "tp.activation_bytes"));
  EXPECT_TRUE(rep.ok);
}

TEST(TensorParallelLab, BadShapesAreUsageErrorsNamingTheConstraint) {
  const LabInfo* lab = find_lab("tensor_parallel");
  ASSERT_NE(lab, nullptr);
  auto expect_usage = [&](int T, std::map<std::string, std::string> o, const std::string& words) {
    try {
      LabConfig cfg;
      cfg.ranks = T;
      cfg.options = o;
      tp_settings(with_defaults(*lab, cfg), T);
      ADD_FAILURE() << "no error for T=" << T << ", expected one saying '" << words << "'";
    } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what(); }
  };
  expect_usage(4, {{"model", "gpt"}, {"heads", "6"}, {"hidden", "48"}}, "heads");
  expect_usage(2, {{"model", "gpt"}, {"vocab", "15"}}, "vocab");
  expect_usage(4, {{"model", "gpt"}, {"heads", "2"}, {"hidden", "32"}}, "heads");
  expect_usage(4, {{"sequence-parallel", "on"}, {"seq", "6"}}, "seq");
  expect_usage(2, {{"heads", "8"}}, "--model gpt");
  expect_usage(2, {{"heads", "4"}}, "--model gpt");  // given at its default: still refused
  expect_usage(2, {{"tp", "4"}}, "--ranks");
}

// The MLP at T = 1 against the same blocks written here in float64: loss and every gradient.
TEST(TensorParallelLab, MlpOnOneRankMatchesAFloat64Reference) {
  const int h = 8, L = 2, R = 5;
  Trace trace(1);
  double worst = 0;
  dtl::test::run_ranks(
      1,
      [&](Comm& c) {
        MemoryTracker mem(0, nullptr);
        TpMlp model({h, L, R}, {c, ex::TpMode::plain}, mem, 3, train_ops(Device::cpu()));
        std::mt19937 gen(5);
        std::normal_distribution<float> n(0.0f, 1.0f);
        std::vector<float> x(std::size_t(R) * h), t(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = n(gen), t[i] = n(gen);
        const float loss = model.forward_backward(x.data(), t.data());
        std::map<std::string, std::vector<double>> W;
        for (const std::string& name : model.names()) {
          const std::vector<float> p = model.full_params(name);
          W[name] = std::vector<double>(p.begin(), p.end());
        }
        auto gelu = [](double v) {
          return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        };
        auto dgelu = [](double v) {
          const double k = std::sqrt(2 / M_PI), u = k * (v + 0.044715 * v * v * v), th = std::tanh(u);
          return 0.5 * (1 + th) + 0.5 * v * (1 - th * th) * k * (1 + 3 * 0.044715 * v * v);
        };
        // Forward in double, keeping each block's input and pre-activation.
        std::vector<std::vector<double>> xs(L + 1, std::vector<double>(x.begin(), x.end())), zs(L);
        for (int l = 0; l < L; ++l) {
          const std::string p = "h." + std::to_string(l) + ".mlp.";
          const auto &w1 = W[p + "c_fc.weight"], &b1 = W[p + "c_fc.bias"], &w2 = W[p + "c_proj.weight"],
                     &b2 = W[p + "c_proj.bias"];
          zs[l].assign(std::size_t(R) * 4 * h, 0);
          for (int r = 0; r < R; ++r)
            for (int o = 0; o < 4 * h; ++o) {
              double acc = b1[o];
              for (int i = 0; i < h; ++i) acc += xs[l][r * h + i] * w1[o * h + i];
              zs[l][r * 4 * h + o] = acc;
            }
          for (int r = 0; r < R; ++r)
            for (int o = 0; o < h; ++o) {
              double acc = b2[o] + xs[l][r * h + o];
              for (int i = 0; i < 4 * h; ++i) acc += gelu(zs[l][r * 4 * h + i]) * w2[o * 4 * h + i];
              xs[l + 1][r * h + o] = acc;
            }
        }
        double ref_loss = 0;
        std::vector<double> dx(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double d = xs[L][i] - t[i];
          ref_loss += d * d / double(x.size());
          dx[i] = 2 * d / double(x.size());
        }
        worst = std::fabs(ref_loss - loss) / ref_loss;
        // Backward in double; compare each gradient with dtlab's.
        for (int l = L - 1; l >= 0; --l) {
          const std::string p = "h." + std::to_string(l) + ".mlp.";
          const auto &w1 = W[p + "c_fc.weight"], &w2 = W[p + "c_proj.weight"];
          std::vector<double> gw1(w1.size()), gb1(4 * h), gw2(w2.size()), gb2(h), dz(std::size_t(R) * 4 * h),
              dprev = dx;
          for (int r = 0; r < R; ++r)
            for (int o = 0; o < h; ++o) {
              const double g = dx[r * h + o];
              gb2[o] += g;
              for (int i = 0; i < 4 * h; ++i)
                gw2[o * 4 * h + i] += g * gelu(zs[l][r * 4 * h + i]), dz[r * 4 * h + i] += g * w2[o * 4 * h + i];
            }
          for (int r = 0; r < R; ++r)
            for (int o = 0; o < 4 * h; ++o) {
              const double g = dz[r * 4 * h + o] * dgelu(zs[l][r * 4 * h + o]);
              gb1[o] += g;
              for (int i = 0; i < h; ++i) gw1[o * h + i] += g * xs[l][r * h + i], dprev[r * h + i] += g * w1[o * h + i];
            }
          const std::pair<const char*, std::vector<double>*> grads[] = {
              {"c_fc.weight", &gw1}, {"c_fc.bias", &gb1}, {"c_proj.weight", &gw2}, {"c_proj.bias", &gb2}};
          for (const auto& [name, ref] : grads) {
            const std::vector<float> got = model.full_grads(p + name);
            double diff = 0, scale = 1e-30;
            for (std::size_t i = 0; i < ref->size(); ++i)
              diff = std::max(diff, std::fabs(got[i] - (*ref)[i])), scale = std::max(scale, std::fabs((*ref)[i]));
            worst = std::max(worst, diff / scale);
          }
          dx = dprev;
        }
      },
      &trace);
  std::printf("MLP T=1 vs float64: largest relative difference %.2e (loss and every gradient)\n", worst);
  EXPECT_LT(worst, 1e-5);
}
