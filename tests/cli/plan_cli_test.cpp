// `dtlab plan` as a user runs it: the 175B example of seed 002 prints its memory rows, a grid
// that does not multiply to the GPUs is exit 2 naming the rule, and --json is JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

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

// The model described is the model computed: a whole shape is planned as itself (named so,
// its Ψ counted from it), and a shape that contradicts --model, --params beside a shape or
// half a shape is exit 2 naming both sides.
TEST(PlanCli, TheModelDescribedIsTheModelComputed) {
  for (const char* cmd : {"plan", "simulate"}) {
    const auto o = run_dtlab(std::string(cmd) + " --layers 24 --hidden 2304 --heads 24 --seq 2048 --vocab 51200");
    ASSERT_EQ(o.code, 0) << cmd << "\n" << o.err;
    EXPECT_EQ(o.out.find("175b"), std::string::npos) << cmd << ": the preset's name on a shape of 1.65 B:\n" << o.out;
    EXPECT_NE(o.out.find("1.652 billion"), std::string::npos) << cmd << "\n" << o.out;
  }
  struct Bad {
    const char* args;
    const char* names;  // what the message must quote
  };
  for (const Bad& b :
       {Bad{"plan --model 7b --layers 24", "--layers 32, not 24"},
        Bad{"plan --layers 24 --hidden 2304", "missing --heads"},
        Bad{"plan --params 1.5B --layers 96", "--params 1.5B"},
        Bad{"simulate --params 1.5B --layers 96", "--params 1.5B"}, Bad{"plan --params 7B --model 7b", "--model 7b"},
        Bad{"plan --params 1e-3", "less than one parameter"},
        Bad{"plan --dp 10000 --tp 1000 --pp 1000", "10000000000 GPUs"}, Bad{"plan --global-batch 64", "--search"},
        Bad{"plan --search 8 --model 7b --recompute full", "--recompute"},
        Bad{"simulate --model 7b --dp 2 --steps 3", "--trace"},
        Bad{"simulate --model 7b --dp 2 --convention 12", "--convention"}}) {
    const auto o = run_dtlab(b.args);
    EXPECT_EQ(o.code, 2) << b.args << "\n" << o.out << o.err;
    EXPECT_NE(o.err.find(b.names), std::string::npos) << b.args << "\n" << o.err;
  }
}

// When nothing fits, the search names the rule that left nothing: 97 GPUs cannot split a
// global batch of 512 (the cause), not "add memory".
TEST(PlanCli, AnEmptySearchSaysWhichRuleLeftNothing) {
  const auto batch = run_dtlab("plan --search 97 --model 7b");
  ASSERT_EQ(batch.code, 0) << batch.err;
  EXPECT_NE(batch.out.find("global batch 512 is not a"), std::string::npos) << batch.out;
  const auto fixed = run_dtlab("plan --search 97 --model 7b --global-batch 970");
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_EQ(fixed.out.find("no configuration fits"), std::string::npos) << fixed.out;
  const auto memory = run_dtlab("plan --search 8 --model 175b");
  ASSERT_EQ(memory.code, 0) << memory.err;
  EXPECT_NE(memory.out.find("needs more memory"), std::string::npos) << memory.out;
}

// `plan --experts`: the header names the model with its experts and its active Ψ, the ledger
// has the ep all-to-alls; what cannot hold experts is exit 2 naming why.
TEST(PlanCli, ExpertsArePlannedAndWhatCannotHoldThemIsRefused) {
  const auto o = run_dtlab("plan --model 7b --experts 8 --ep 2 --gpus 32 --dp 4 --tp 4 --pp 2");
  ASSERT_EQ(o.code, 0) << o.err;
  const auto simulated = run_dtlab("simulate --model mixtral-8x7b --ep 8 --dp 8 --tp 2 --seq 4096 --micro-batches 8");
  ASSERT_NE(simulated.code, 0) << "--seq 4096 is another Mixtral (32768): refused";
  const auto mixtral =
      run_dtlab("simulate --model mixtral-8x7b --ep 8 --dp 8 --tp 2 --micro-batches 8 --recompute full");
  ASSERT_EQ(mixtral.code, 0) << mixtral.err;
  EXPECT_NE(mixtral.out.find("EP all-to-alls per GPU"), std::string::npos) << mixtral.out;
  for (const char* want : {"with 8 experts (top-2)", "active per token", "ep all_to_all dispatch and combine",
                           "(experts)", "exposed EP all-to-alls"})
    EXPECT_NE(o.out.find(want), std::string::npos) << want << " missing:\n" << o.out;
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"plan --model 7b --top-k 2", "--experts"},
           {"plan --params 7e9 --experts 8", "--params"},
           {"plan --model 7b --experts 8 --ep 3 --dp 3 --gpus 3", "divide"},
           {"plan --model 7b --ep 2 --dp 2 --gpus 2", "--experts"},
           {"plan --model 7b --experts 8 --search 16", "--experts"}}) {
    const auto r = run_dtlab(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  }
}

// `plan --cp`: the report shows the cp axis (its config, the rank order, the ring's ledger lines
// and exposed time); what cannot be split over cp is exit 2 saying what to do.
TEST(PlanCli, ContextParallelismIsPlannedAndWhatCannotBeSplitIsRefused) {
  const auto o = run_dtlab("plan --model 7b --gpus 32 --dp 2 --tp 4 --pp 2 --cp 2 --zero 1");
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* want :
       {"× cp 2", "then cp, dp, pp", "cp send K/V (ring attention, forward)",
        "cp send dK/dV (ring attention, backward)", "(over dp·cp)", "exposed CP ring hops", "/(t·cp)"})
    EXPECT_NE(o.out.find(want), std::string::npos) << want << " missing:\n" << o.out;
  const auto j = nlohmann::json::parse(run_dtlab("plan --model 7b --gpus 32 --dp 2 --tp 4 --pp 2 --cp 2 --json").out);
  EXPECT_EQ(j["config"]["cp"], 2);
  EXPECT_NE(j["config"]["rank_order"].get<std::string>().find("cp_rank·tp"), std::string::npos);
  const auto ulysses = run_dtlab("plan --model 7b --gpus 32 --dp 2 --tp 4 --pp 2 --cp 2 --cp-algo ulysses");
  ASSERT_EQ(ulysses.code, 0) << ulysses.err;
  for (const char* want :
       {"× cp 2 (ulysses)", "cp all_to_all Q/K/V (Ulysses, forward)", "exposed CP ulysses collectives"})
    EXPECT_NE(ulysses.out.find(want), std::string::npos) << want << " missing:\n" << ulysses.out;
  for (const auto& [args, says] :
       std::vector<std::pair<std::string, std::string>>{{"plan --model 7b --cp 3 --gpus 3", "2·cp"},
                                                        {"plan --params 7e9 --cp 2", "sequence"},
                                                        {"plan --model 7b --cp 2 --gpus 4 --dp 4", "--cp"},
                                                        {"plan --model 7b --cp 2 --search 16", "--cp"},
                                                        {"plan --model 7b --experts 8 --cp 2", "--experts"},
                                                        {"plan --model 7b --cp 0", "--cp"},
                                                        {"simulate --model 7b --cp 3", "2·cp"},
                                                        {"plan --model 7b --cp-algo ulysses", "--cp N"},
                                                        {"simulate --model 7b --cp-algo all-gather", "--cp N"},
                                                        {"plan --model 7b --tp 4 --cp 16 --cp-algo ulysses", "heads"},
                                                        {"plan --model 7b --cp 2 --cp-algo zigzag", "--cp-algo"}}) {
    const auto r = run_dtlab(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": one line\n" << r.err;
  }
}

// Model families and bad shapes (issue 45): a Llama-style shape plans; heads that do not divide the
// hidden size, key/value heads that do not divide the heads or do not split over tp are exit 2
// saying what to do.
TEST(PlanCli, LlamaShapesPlanAndBadShapesAreRefused) {
  const auto llama = run_dtlab(
      "plan --layers 32 --hidden 4096 --heads 32 --kv-heads 8 --ffn 14336 --family llama "
      "--seq 8192 --vocab 128256 --dp 8");
  ASSERT_EQ(llama.code, 0) << llama.err;
  EXPECT_NE(llama.out.find("8.03 billion"), std::string::npos) << llama.out;  // Llama 3 8B's 8,030,261,248
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"plan --layers 2 --hidden 100 --heads 7 --seq 64 --vocab 100", "hidden 100 must be divisible by heads 7"},
           {"plan --layers 2 --hidden 128 --heads 8 --kv-heads 3 --seq 64 --vocab 100", "--kv-heads 3 must divide"},
           {"plan --layers 2 --hidden 128 --heads 8 --kv-heads 2 --seq 64 --vocab 100 --tp 4", "--kv-heads"},
           {"plan --model llama3-8b --kv-heads 4", "another model"}}) {
    const auto r = run_dtlab(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  }
}
