// `dtlab plan` as a user runs it: the 175B example of seed 002 prints its memory rows, a grid
// that does not multiply to the GPUs is exit 2 naming the rule, and --json is JSON.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_util.h"

using dtl::test::run_dtlab;

TEST(PlanCli, GptThreeOnTwoHundredFiftySixA100PrintsItsMemory) {
  const auto o = run_dtlab("plan --model 175b --cluster a100-80gb --gpus 256 --dp 8 --tp 8 --pp 4");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* row : {"parameters", "gradients", "optimizer states", "model state", "activations", "total per GPU",
                          "pipeline bubble", "tokens/s", "MFU"})
    EXPECT_NE(o.out.find(row), std::string::npos) << row << " missing:\n" << o.out;
  EXPECT_EQ(o.out.find("result:"), std::string::npos) << o.out;
}

TEST(PlanCli, AGridThatIsNotTheGpuCountIsAUsageError) {
  const auto o = run_dtlab("plan --model 175b --gpus 256 --dp 3 --tp 8 --pp 4");
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.err.find("dp·tp·pp"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("256"), std::string::npos) << o.err;
  for (const char* args : {"plan --model 42b", "plan --model 175b --tp 5 --gpus 5", "plan --model 175b --zero 4",
                           "plan --model 175b --pp 97 --gpus 97", "plan --params 0"}) {
    const auto bad = run_dtlab(args);
    EXPECT_EQ(bad.code, 2) << args << "\n" << bad.err;
  }
}

TEST(PlanCli, JsonParsesAndCarriesTheSeedsFigure) {
  const auto o = run_dtlab("plan --model 175b --gpus 256 --dp 8 --tp 8 --pp 4 --zero 2 --convention 12 --json");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  double model_state = -1;
  for (const auto& row : j.at("rows"))
    if (row.at("id") == "memory.model_state") model_state = row.at("measured").get<double>();
  EXPECT_NEAR(model_state, 17.77, 0.01);  // GB, seed 002's 17.78
}

TEST(PlanCli, SearchRanksConfigurations) {
  const auto o = run_dtlab("plan --model 175b --cluster a100-80gb --search 256");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("fastest"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("slower: "), std::string::npos) << o.out;
}
