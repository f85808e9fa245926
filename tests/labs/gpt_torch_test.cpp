// dtlab's GPT against the same model in PyTorch (tests/python/gpt_torch_check.py): one
// forward and backward on fixed tokens, then the loss, the logits and every gradient
// compared tensor by tensor, normwise relative error at most 1e-5 in fp32. Skipped, with
// the reason, where no python3 imports torch. Also: loading a checkpoint that does not
// fit the model is refused with the tensor's name (labs/train/gpt_checkpoint.h).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/util/safetensors.h"
#include "labs/train/gpt.h"
#include "labs/train/gpt_checkpoint.h"
#include "tests/python_torch.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

// Small enough for a second in PyTorch, big enough for several heads, two blocks and a
// vocabulary that is not a power of two. perturb_all: biases and LayerNorm parameters
// nonzero, so a bias or a LayerNorm gradient handled wrong shows.
const GptConfig kConfig{.vocab = 24, .seq = 8, .hidden = 32, .heads = 4, .layers = 2, .batch = 3};
const GptInit kInit{.std = 0.1f, .perturb_all = true};

std::vector<std::int32_t> random_tokens(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, vocab - 1);
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (auto& v : t) v = d(rng);
  return t;
}

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("gpt_torch_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// The model's checkpoint and, beside it, the tokens, targets, loss, logits [S·B, V] (row
// s·B + b, as the model orders them) and grad.<name> of one forward_backward.
void write_files(const std::string& checkpoint, const std::string& io) {
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(comm.rank(), nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 3, Device::cpu(), kInit);
    const auto tokens = random_tokens(kConfig.rows(), kConfig.vocab, 21);
    const auto targets = random_tokens(kConfig.rows(), kConfig.vocab, 22);
    const float loss = model.forward_backward(tokens.data(), targets.data());
    write_safetensors(checkpoint, gpt_checkpoint(model));
    SafeTensors out;
    const std::int64_t S = kConfig.seq, B = kConfig.batch, R = kConfig.rows(), V = kConfig.vocab;
    out.add("tokens", {S, B}, tokens);
    out.add("targets", {S, B}, targets);
    out.add("loss", {1}, std::vector<float>{loss});
    model.forward(tokens.data(), targets.data());  // the logits again: forward_backward gave its own back
    out.add("logits", {R, V}, std::vector<float>(model.logits(), model.logits() + R * V));
    for (const GptTensor& t : model.tensors())
      out.add("grad." + t.name, t.full_shape, model.full_tensor(t.name, GptBuffer::grads));
    write_safetensors(io, out);
  });
}

}  // namespace

TEST(GptTorch, LossLogitsAndEveryGradientMatchPyTorch) {
  const std::string python = test::python_with_torch();
  if (python.empty()) GTEST_SKIP() << test::kNoTorchReason;
  const std::string checkpoint = temp_path("gpt.safetensors"), io = temp_path("gpt_io.safetensors");
  write_files(checkpoint, io);
  const test::CommandResult r = test::run_command(python + " " + DTL_SOURCE_DIR + "/tests/python/gpt_torch_check.py " +
                                                  checkpoint + " " + io + " --tolerance 1e-5");
  std::printf("%s", r.output.c_str());  // the per-tensor errors, in the log whether it passes or not
  EXPECT_EQ(r.code, 0) << "gpt_torch_check.py: exit 0 pass, 1 over tolerance, 2 the files do not fit:\n" << r.output;
}

namespace {

// A checkpoint of the model, edited by `edit`, written and read back, loaded into the
// model: the UsageError's message ("" when the load succeeds).
std::string load_error(const std::function<void(SafeTensors&)>& edit) {
  const std::string path = temp_path("edited.safetensors");
  std::string message;
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(comm.rank(), nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 3, Device::cpu(), kInit);
    SafeTensors ckpt = gpt_checkpoint(model);
    edit(ckpt);
    write_safetensors(path, ckpt);
    try {
      load_gpt_checkpoint(model, read_safetensors(path));
    } catch (const UsageError& e) { message = e.what(); }
  });
  return message;
}

}  // namespace

TEST(GptCheckpoint, AWrongShapeIsRefusedNamingTheTensorAndBothShapes) {
  const std::string e = load_error([](SafeTensors& c) {
    c.add("h.1.attn.c_attn.weight", {48, 16}, std::vector<float>(48 * 16, 0.5f));
  });
  EXPECT_NE(e.find("h.1.attn.c_attn.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[48, 16]"), std::string::npos) << e;
  EXPECT_NE(e.find("[96, 32]"), std::string::npos) << e;
  EXPECT_NE(e.find("edited.safetensors"), std::string::npos) << e;
}

TEST(GptCheckpoint, AMissingOrExtraTensorOrOtherHeadsAreRefused) {
  const std::string extra = load_error([](SafeTensors& c) { c.add("h.2.ln_1.weight", {32}, std::vector<float>(32)); });
  EXPECT_NE(extra.find("'h.2.ln_1.weight'"), std::string::npos) << extra;
  const std::string missing = load_error([](SafeTensors& c) {
    SafeTensors without;
    for (const auto& [name, t] : c.tensors())
      if (name != "h.1.ln_2.bias") without.add(name, t.dtype, t.shape, t.bytes.data());
    c = without;
  });
  EXPECT_NE(missing.find("'h.1.ln_2.bias'"), std::string::npos) << missing;
  const std::string heads =
      load_error([](SafeTensors& c) { c.metadata()["n_head"] = std::to_string(2 * kConfig.heads); });
  EXPECT_NE(heads.find("n_head is 8"), std::string::npos) << heads;
  EXPECT_EQ(load_error([](SafeTensors&) {}), "") << "the model's own checkpoint loads";
}

TEST(GptCheckpoint, ALoadedCheckpointGivesTheSameLoss) {
  const auto tokens = random_tokens(kConfig.rows(), kConfig.vocab, 31);
  const std::string path = temp_path("roundtrip.safetensors");
  float saved_loss = 0, loaded_loss = 0;
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(comm.rank(), nullptr);
    Gpt a(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 3, Device::cpu(), kInit);
    Gpt b(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 4, Device::cpu(), kInit);  // other weights
    write_safetensors(path, gpt_checkpoint(a));
    load_gpt_checkpoint(b, read_safetensors(path));
    saved_loss = a.forward(tokens.data(), tokens.data());
    loaded_loss = b.forward(tokens.data(), tokens.data());
  });
  EXPECT_EQ(saved_loss, loaded_loss);
}
