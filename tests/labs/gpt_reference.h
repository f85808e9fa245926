// A float64 GPT-2 loss written from the definitions, independent of labs/train/gpt.cpp: the
// tests compare dtlab's fp32 loss with it and dtlab's analytic gradients with its central
// finite differences. Plain loops over [token][feature] arrays, no BLAS, no tensor
// parallelism; it reads the model's full tensors by their GPT-2 names.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "labs/train/gpt.h"

namespace dtl::test {

using GptTensors = std::map<std::string, std::vector<double>>;
using Rows = std::vector<std::vector<double>>;  // [token row][feature], row = s·B + b

namespace gpt_ref {

// y = x·Wᵀ + b, W [out × in] row-major.
inline Rows linear(const Rows& x, const std::vector<double>& W, const std::vector<double>& b, int out) {
  Rows y(x.size(), std::vector<double>(std::size_t(out)));
  const std::size_t in = x[0].size();
  for (std::size_t r = 0; r < x.size(); ++r)
    for (int o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[std::size_t(o)];
      for (std::size_t i = 0; i < in; ++i) acc += x[r][i] * W[std::size_t(o) * in + i];
      y[r][std::size_t(o)] = acc;
    }
  return y;
}

inline Rows layer_norm(const Rows& x, const std::vector<double>& w, const std::vector<double>& b) {
  Rows y = x;
  for (std::vector<double>& row : y) {
    double mean = 0, var = 0;
    for (double v : row) mean += v;
    mean /= double(row.size());
    for (double v : row) var += (v - mean) * (v - mean);
    var /= double(row.size());
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = (row[i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i];
  }
  return y;
}

inline double gelu(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }

// Causal attention of each sequence b and head: row s·B + b attends to positions 0..s.
inline Rows attention(const Rows& qkv, const GptConfig& c) {
  const int h = c.hidden, d = h / c.heads;
  Rows out(qkv.size(), std::vector<double>(std::size_t(h)));
  const auto row = [&](int s, int b) { return std::size_t(s * c.batch + b); };
  for (int b = 0; b < c.batch; ++b)
    for (int head = 0; head < c.heads; ++head)
      for (int s = 0; s < c.seq; ++s) {
        std::vector<double> w(std::size_t(s) + 1);
        for (int t = 0; t <= s; ++t) {
          double dot = 0;
          for (int k = 0; k < d; ++k)  // Q of row (s, b) · K of row (t, b)
            dot += qkv[row(s, b)][std::size_t(head * d + k)] * qkv[row(t, b)][std::size_t(h + head * d + k)];
          w[std::size_t(t)] = dot / std::sqrt(double(d));
        }
        const double mx = *std::max_element(w.begin(), w.end());
        double sum = 0;
        for (double& e : w) sum += e = std::exp(e - mx);
        for (int k = 0; k < d; ++k) {
          double acc = 0;
          for (int t = 0; t <= s; ++t)  // softmax weight · V of row (t, b)
            acc += w[std::size_t(t)] / sum * qkv[row(t, b)][std::size_t(2 * h + head * d + k)];
          out[row(s, b)][std::size_t(head * d + k)] = acc;
        }
      }
  return out;
}

inline void add_to(Rows& x, const Rows& y) {
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::size_t i = 0; i < x[r].size(); ++i) x[r][i] += y[r][i];
}

}  // namespace gpt_ref

// The mean softmax cross-entropy of the GPT with parameters p on tokens → targets.
inline double gpt_reference_loss(const GptConfig& c, const GptTensors& p, const std::vector<int>& tokens,
                                 const std::vector<int>& targets) {
  using namespace gpt_ref;
  const int h = c.hidden, R = c.rows();
  const auto& wte = p.at("wte");
  const auto& wpe = p.at("wpe");
  Rows x(static_cast<std::size_t>(R), std::vector<double>(static_cast<std::size_t>(h)));
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < h; ++i)
      x[std::size_t(r)][std::size_t(i)] =
          wte[std::size_t(tokens[std::size_t(r)] * h + i)] + wpe[std::size_t((r / c.batch) * h + i)];
  for (int l = 0; l < c.layers; ++l) {
    const std::string n = "h." + std::to_string(l) + ".";
    const Rows qkv = linear(layer_norm(x, p.at(n + "ln_1.weight"), p.at(n + "ln_1.bias")),
                            p.at(n + "attn.c_attn.weight"), p.at(n + "attn.c_attn.bias"), 3 * h);
    add_to(x, linear(attention(qkv, c), p.at(n + "attn.c_proj.weight"), p.at(n + "attn.c_proj.bias"), h));
    Rows fc = linear(layer_norm(x, p.at(n + "ln_2.weight"), p.at(n + "ln_2.bias")), p.at(n + "mlp.c_fc.weight"),
                     p.at(n + "mlp.c_fc.bias"), 4 * h);
    for (auto& row : fc)
      for (double& v : row) v = gelu(v);
    add_to(x, linear(fc, p.at(n + "mlp.c_proj.weight"), p.at(n + "mlp.c_proj.bias"), h));
  }
  const Rows logits = linear(layer_norm(x, p.at("ln_f.weight"), p.at("ln_f.bias")), wte, {}, c.vocab);
  double loss = 0;
  for (int r = 0; r < R; ++r) {
    const auto& z = logits[std::size_t(r)];
    const double mx = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (double v : z) sum += std::exp(v - mx);
    loss += std::log(sum) + mx - z[std::size_t(targets[std::size_t(r)])];
  }
  return loss / R;
}

}  // namespace dtl::test
