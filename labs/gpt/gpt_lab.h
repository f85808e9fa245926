// The GPT lab: the tiny GPT of labs/train/gpt.h learns the characters of dtlab's own
// documentation (labs/train/text_corpus.h), on --ranks T tensor-parallel thread ranks.
//
//   dtlab run gpt                                   2 layers, h 64, 4 heads, 300 AdamW steps
//   dtlab run gpt --ranks 2 --save gpt.safetensors  the same model, split over 2 ranks
//   dtlab run gpt --load gpt.safetensors --steps 0  evaluate and sample a saved model
//
// Each step trains on one batch of B windows of S characters; every --eval-every steps
// (and before the first and after the last) the held-out loss is the mean over a fixed set
// of held-out batches, forward only. The report shows both curves (a chart in the
// terminal, a plot in dtlab-viz), checks that the model learned more than uniform
// guessing, and prints a sample the model writes from a prompt.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/gpt.h"
#include "labs/train/gpt_activation_report.h"
#include "labs/train/text_corpus.h"

namespace dtl {

struct GptLabSettings {
  GptConfig model;  // vocab: the corpus's character vocabulary
  int steps = 300, eval_every = 25;
  std::uint32_t seed = 1;        // initialization, batches and sampling
  std::string save, load;        // checkpoint paths; "" for none
  DType precision = DType::f32;  // --precision: fp32, or bf16/fp16 mixed precision (labs/train/gpt.h)
  theory::Recompute recompute = theory::Recompute::none;  // --recompute (labs/train/gpt.h)
  // eps 1e-5 as in the tensor-parallel lab (tp_lab.h): gradients that are rounding noise
  // (attention's K bias) must not become lr-sized steps that differ with T.
  kernels::AdamWConfig adamw{3e-3f, 0.9f, 0.95f, 1e-5f, 0.0f};
  // Sharded checkpoints (labs/train/checkpoint_run.h, gpt_sharded.h): every rank its slices, fp32.
  int checkpoint_every = 0;
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
};
// The lab's options, each bound to its field of GptLabSettings.
const OptionTable<GptLabSettings>& gpt_option_table();

// The losses of one run, in nats per character, and what the run measured.
struct GptTrainingLog {
  std::vector<double> train_step, train_loss;        // every step (1-based)
  std::vector<double> held_out_step, held_out_loss;  // step 0 = before training
  double train_seconds = 0;                          // the training steps only (rank 0's clock)
  std::string prompt, sample;                        // the sample continues the prompt
  int skipped_steps = 0;                             // fp16: steps whose gradients overflowed
  // Rank 0's peak bytes by tag, its parameter count (its slice) and its activation prediction.
  double param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0, activation_bytes = 0, predicted_activation = 0;
  std::size_t local_params = 0;
  double device_vs_tracker = 0;     // the device's own count - the tracker (largest over ranks)
  GptActivationFigures activation;  // per layer, recomputed, and the twin's gradient check
  CheckpointStats checkpoints;
};

// The held-out batches every evaluation averages over: the same ones each time, so the
// curve shows the model changing, not the data.
inline constexpr int kHeldOutBatches = 4;

GptLabSettings gpt_lab_settings(const LabConfig& cfg, int T, const TextCorpus& corpus);
Report run_gpt_lab(Comm& comm, const LabConfig& cfg);
LabInfo gpt_lab_info();

// `count` characters the model writes after `prompt` (gpt_sample.cpp): the last S
// characters are the context; the next one is drawn from softmax(logits / temperature)
// with a generator seeded by `seed`, the same on every rank. A collective over the tp group.
std::string sample_text(Gpt& model, Comm& comm, const TextCorpus& corpus, const std::string& prompt, int count,
                        float temperature, std::uint32_t seed);

// `bytes` for a terminal and for JSON: the model writes byte by byte, so a sample may cut
// a UTF-8 character; such bytes become '?', a newline '↵', other control bytes a space.
std::string printable_text(std::string_view bytes);

// The loss curves so far: the report's plots, and what a live viewer draws as the run goes.
std::vector<ReportPlot> loss_curves(const GptTrainingLog& log);
// The report (gpt_report.cpp).
void describe_gpt_setup(Report& rep, const GptLabSettings& s, const TextCorpus& corpus, std::size_t params);
void add_gpt_rows(Report& rep, const GptLabSettings& s, const GptTrainingLog& log);
void add_gpt_memory_rows(Report& rep, const GptLabSettings& s, const GptTrainingLog& log);

}  // namespace dtl
