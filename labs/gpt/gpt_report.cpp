// The GPT lab's report rows, curves, chart and registry entry (gpt_lab.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "labs/gpt/gpt_lab.h"
#include "labs/gpt/loss_chart.h"
#include "labs/measure.h"

namespace dtl {

namespace {

// A check against uniform guessing needs a mean, not one noisy batch: the last tenth of
// the steps (at least 1, at most 20).
double late_train_loss(const GptTrainingLog& log) {
  const std::size_t n = log.train_loss.size(), k = std::clamp<std::size_t>(n / 10, 1, 20);
  if (n == 0) return NAN;
  return std::accumulate(log.train_loss.end() - std::ptrdiff_t(k), log.train_loss.end(), 0.0) / double(k);
}

// At most `limit` points: consecutive groups of steps become their mean (the visualizer
// draws a plot of up to 4096 points; a long run's curve needs far fewer to read).
ReportPlot thinned(ReportPlot p, std::size_t limit) {
  const std::size_t n = p.x.size(), group = (n + limit - 1) / std::max<std::size_t>(limit, 1);
  if (group <= 1) return p;
  const auto mean = [](const std::vector<double>& v, std::size_t begin, std::size_t end) {
    return std::accumulate(v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end), 0.0) /
           double(end - begin);
  };
  std::vector<double> x, y;
  for (std::size_t begin = 0; begin < n; begin += group) {
    const std::size_t end = std::min(n, begin + group);
    x.push_back(mean(p.x, begin, end));
    y.push_back(mean(p.y, begin, end));
  }
  p.x = std::move(x), p.y = std::move(y);
  p.title += " (mean of every " + std::to_string(group) + ")";
  return p;
}

}  // namespace

std::vector<ReportPlot> loss_curves(const GptTrainingLog& log) {
  return {thinned({"train_loss",
                   "training loss per step",
                   "step",
                   "",
                   "loss (nats per character)",
                   "",
                   log.train_step,
                   log.train_loss,
                   {}},
                  1000),
          thinned({"held_out_loss",
                   "held-out loss (mean of " + std::to_string(kHeldOutBatches) + " batches)",
                   "step",
                   "",
                   "loss (nats per character)",
                   "",
                   log.held_out_step,
                   log.held_out_loss,
                   {}},
                  1000)};
}

namespace {

void add_curves(Report& rep, const GptTrainingLog& log) {
  for (ReportPlot& p : loss_curves(log)) rep.plots.push_back(std::move(p));
  if (log.train_loss.empty()) return;
  // Up to 80 columns of marks, so the chart and its labels fit in the report's 100.
  const int columns = int(std::min<std::size_t>(80, std::max<std::size_t>(log.train_step.size(), 8)));
  rep.notes.push_back("Loss (nats per character) against the training step:");
  for (const std::string& line :
       text_chart({{"train (mean per column)", "•", log.train_step, log.train_loss},
                   {"held-out", "◆", log.held_out_step, log.held_out_loss}},
                  "step", columns, 10, *std::max_element(log.held_out_loss.begin(), log.held_out_loss.end())))
    rep.notes.push_back(line);
}

}  // namespace

void describe_gpt_setup(Report& rep, const GptLabSettings& s, const TextCorpus& corpus, std::size_t params) {
  const GptConfig& c = s.model;
  char text[200];
  std::snprintf(text, sizeof text, "GPT: %d layers, h %d, %d heads, %zu parameters", c.layers, c.hidden, c.heads,
                params);
  rep.setup.push_back(text);
  std::snprintf(text, sizeof text, "%zu characters of dtlab's docs, vocabulary %d (%d used)", corpus.tokens().size(),
                corpus.vocab_size(), corpus.symbols_used());
  rep.setup.push_back(text);
  std::snprintf(text, sizeof text, "b %d × s %d, %d AdamW steps, lr %g", c.batch, c.seq, s.steps, double(s.adamw.lr));
  rep.setup.push_back(text);
  rep.setup.push_back("T = " + std::to_string(rep.ranks) + " (tensor parallel), " +
                      (s.precision == DType::f32 ? std::string("fp32")
                                                 : std::string(s.precision == DType::bf16 ? "bf16" : "fp16") +
                                                       " mixed precision, fp32 master"));
  if (!s.load.empty()) rep.setup.push_back("from " + s.load);
  rep.add("params", "parameters", double(params), "");
  rep.config["text_sources"] = std::string(shipped_text_sources());
}

// The learning milestones (a nat below uniform, the held-out loss down 10 %) need steps to be
// reached: the default model at the default lr is at 4.99, 4.72, 4.53, 4.37 nats after 1–4 steps
// and 3.91 after 8 (2 ranks, measured), so a shorter run shows the figures without the checks.
constexpr std::size_t kLearningSteps = 10;

void add_gpt_rows(Report& rep, const GptLabSettings& s, const GptTrainingLog& log) {
  const double uniform = std::log(double(s.model.vocab));  // the loss of guessing every character equally
  const bool can_learn = log.train_loss.size() >= kLearningSteps;
  if (!log.train_loss.empty() && !can_learn)
    rep.notes.push_back("the learning checks (train loss a nat below uniform, held-out loss down 10 %) need at least " +
                        std::to_string(kLearningSteps) + " steps; this run trained " +
                        std::to_string(log.train_loss.size()) + ": their figures are shown, not checked");
  if (!log.train_loss.empty()) {
    if (log.checkpoints.resumed_from < 0)  // (a resumed run's first step is not step 1)
      rep.add("train.loss_first", "train loss, step 1", log.train_loss.front(), "").predict(uniform, "log V: uniform");
    rep.add("train.loss_last", "train loss, last step", log.train_loss.back(), "");
    // Below uniform guessing by a nat: at least the characters' frequencies were learned
    // (their entropy in the docs is about 3.5 nats; uniform is log V ≈ 4.8).
    if (can_learn)
      rep.check("train.loss_late", "train loss, mean of the last steps", late_train_loss(log), 0.0, "", uniform - 1.0)
          .from("≤ log V − 1 nat");
    else
      rep.add("train.loss_late", "train loss, mean of the last steps", late_train_loss(log), "");
    const double tokens = double(log.train_loss.size()) * s.model.rows();
    rep.add("train.tokens_per_s", "training throughput (characters/s)", tokens / log.train_seconds, "");
    rep.add("train.seconds", "training time (forward, backward, AdamW)", log.train_seconds, "s");
  }
  rep.add("held_out.loss_first",
          log.checkpoints.resumed_from < 0 ? "held-out loss, before training" : "held-out loss, at the resumed step",
          log.held_out_loss.front(), "");
  rep.add("held_out.loss_last", "held-out loss, after training", log.held_out_loss.back(), "");
  add_checkpoint_report(rep, "", log.checkpoints);
  // (a resumed run's "before" is the checkpoint's, already trained: the ratio is not the check's)
  const double ratio = log.held_out_loss.back() / log.held_out_loss.front();
  if (!log.train_loss.empty() && log.checkpoints.resumed_from < 0 && can_learn)
    rep.check("held_out.loss_ratio", "held-out loss, after / before", ratio, 0.0, "", 0.9).from("the model learned");
  else if (!log.train_loss.empty() && log.checkpoints.resumed_from < 0)
    rep.add("held_out.loss_ratio", "held-out loss, after / before", ratio, "");
  add_curves(rep, log);
  rep.notes.push_back("Sample (temperature 0.8, seed " + std::to_string(s.seed) + "): \"" + log.prompt + "\" → \"" +
                      printable_text(log.sample) + "\"");
  rep.notes.push_back("Held-out: the last 10% of the text, " + std::to_string(kHeldOutBatches) +
                      " fixed batches, every " + std::to_string(s.eval_every) + " steps. Loss in nats per character.");
}

// Rank 0's model state against the bytes-per-parameter formula (seed 001: mixed-precision
// AdamW keeps 2 + 2 + 12 = 16 B/param; fp32 4 + 4 + 8, also 16), and its activations
// against gpt_activation_bytes (labs/train/gpt.h), which counts what the model stores.
void add_gpt_memory_rows(Report& rep, const GptLabSettings& s, const GptTrainingLog& log) {
  add_model_state_rows(rep, "memory.", ", rank 0", s.precision,
                       {double(log.local_params), log.param_bytes, log.grad_bytes, log.optimizer_bytes});
  rep.check("memory.activation_bytes", "activation bytes, rank 0", log.activation_bytes, log.predicted_activation, "B")
      .from("gpt_activation_bytes");
  add_device_memory_check(rep, "memory.", log.device_vs_tracker);
  GptConfig micro = s.model;  // the formulas' b: the sequences of one step
  add_gpt_activation_rows(rep, "memory.", micro, rep.ranks, ex::TpMode::plain, s.recompute, log.activation);
  if (s.precision == DType::f16) rep.add("train.skipped_steps", "fp16 steps skipped (overflow)", log.skipped_steps, "");
}

}  // namespace dtl
