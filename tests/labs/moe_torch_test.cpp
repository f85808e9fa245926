// The experts lab's model (labs/experts/moe_model.h) against the same mixture of experts in
// PyTorch (tests/python/moe_torch_check.py), float64 there: PyTorch routes on its own (softmax,
// top-k, capacity in GShard's order within each routing group) and must choose and drop
// exactly the slots dtlab did; then the loss and every gradient (router and experts), normwise
// relative error at most 1e-5. With drops (capacity factor 1), without (padded), and with a
// skewed router. Skipped, with the reason, where no python3 imports torch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/util/safetensors.h"
#include "labs/experts/moe_model.h"
#include "tests/python_torch.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("moe_torch_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// One step of the model on one rank with `groups` routing groups, written for the script.
void write_step(const moe::MoeShape& shape, int groups, const std::string& path, const std::string& what) {
  test::run_ranks(1, [&](Comm& comm) {
    moe::MoeModel model(shape, comm, groups);
    const float loss = model.train_step();
    SafeTensors out;
    const std::int64_t T = shape.tokens, h = shape.hidden, f = shape.ffn, E = shape.experts;
    out.add("x", {T, h}, model.inputs());
    out.add("target", {T, h}, model.targets());
    out.add("loss", {1}, std::vector<float>{loss});
    for (std::size_t l = 0; l < model.routing().size(); ++l) {
      const std::vector<int>& c = model.routing()[l].choice;
      out.add("choice " + std::to_string(l), {std::int64_t(c.size())}, std::vector<std::int32_t>(c.begin(), c.end()));
    }
    for (const moe::Param& p : model.params()) {
      const bool router = p.name.ends_with("router"), w1 = p.name.ends_with("w1"), w2 = p.name.ends_with("w2");
      const std::vector<std::int64_t> dims = router ? std::vector<std::int64_t>{E, h}
                                             : w1   ? std::vector<std::int64_t>{f, h}
                                             : w2   ? std::vector<std::int64_t>{h, f}
                                                    : std::vector<std::int64_t>{std::int64_t(p.w.size())};
      out.add(p.name, dims, p.w);
      out.add("grad." + p.name, dims, p.g);
    }
    out.metadata() = {{"experts", std::to_string(E)},
                      {"top_k", std::to_string(shape.top_k)},
                      {"layers", std::to_string(shape.layers)},
                      {"groups", std::to_string(groups)},
                      {"capacity", std::to_string(model.routing().front().capacity)},
                      {"skew", std::to_string(shape.router_skew)},
                      {"aux_weight", std::to_string(shape.aux_weight)},
                      {"case", what}};
    write_safetensors(path, out);
  });
}

}  // namespace

TEST(MoeTorch, RoutingLossAndEveryGradientMatchPyTorch) {
  const std::string python = test::python_with_torch();
  if (python.empty()) GTEST_SKIP() << test::kNoTorchReason;
  struct Case {
    const char* what;
    double capacity_factor;
    bool drop;
    double skew;
  };
  std::string files;
  int n = 0;
  for (const Case& c : {Case{"capacity 1.0, drops", 1.0, true, 0.0}, Case{"padded, no drops", 1.0, false, 0.0},
                        Case{"skewed router, drops", 1.25, true, 2.0}}) {
    moe::MoeShape shape;
    shape.layers = 2, shape.hidden = 16, shape.ffn = 24, shape.experts = 4, shape.top_k = 2, shape.tokens = 48;
    shape.capacity_factor = c.capacity_factor, shape.drop = c.drop, shape.router_skew = c.skew, shape.aux_weight = 0.1f;
    const std::string path = temp_path("moe" + std::to_string(n++) + ".safetensors");
    write_step(shape, 2, path, c.what);
    files += " " + path;
  }
  const test::CommandResult r = test::run_command(python + " " + DTL_SOURCE_DIR + "/tests/python/moe_torch_check.py" +
                                                  files + " --tolerance 1e-5");
  std::printf("%s", r.output.c_str());
  EXPECT_EQ(r.code, 0) << "moe_torch_check.py: exit 0 pass, 1 over tolerance:\n" << r.output;
}
