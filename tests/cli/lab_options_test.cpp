// Every lab refuses every option it does not declare: `dtlab run LAB --OPTION VALUE` exits
// with 2 and a message naming the option, for every option of every other lab and every
// run-wide option the lab does not read. Nothing is accepted and ignored.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/lab.h"
#include "tests/cli/cli_util.h"

using namespace dtl;

namespace {

struct Flag {
  std::string name;  // without the dashes
  bool takes_value = true;
};

// The run-wide options only some labs read, as `dtlab run` spells them.
std::vector<Flag> flags_of(RunOption o) {
  switch (o) {
    case RunOption::bytes: return {{"bytes"}};
    case RunOption::dtype: return {{"dtype"}};
    case RunOption::iters: return {{"iters"}, {"warmup"}};
    case RunOption::device: return {{"device"}};
    case RunOption::step: return {{"step", false}};
    case RunOption::faults: return {{"inject-fault"}, {"inject-hang"}};
    case RunOption::slow_rank: return {{"slow-rank"}};
    case RunOption::repeat: return {{"repeat"}};
  }
  return {};
}

const std::vector<RunOption> kAllRunOptions = {RunOption::bytes,     RunOption::dtype, RunOption::iters,
                                               RunOption::device,    RunOption::step,  RunOption::faults,
                                               RunOption::slow_rank, RunOption::repeat};

// Every option some lab declares or some run-wide option names, that `lab` does not take.
std::vector<Flag> undeclared_for(const LabInfo& lab) {
  std::set<std::string> own;
  for (const OptionSpec& s : lab.options) own.insert(s.name);
  for (RunOption o : lab.run_options)
    for (const Flag& f : flags_of(o)) own.insert(f.name);
  std::vector<Flag> out;
  std::set<std::string> seen;
  for (RunOption o : kAllRunOptions)
    for (const Flag& f : flags_of(o))
      if (!own.count(f.name) && seen.insert(f.name).second) out.push_back(f);
  for (const LabInfo& other : lab_registry())
    for (const OptionSpec& s : other.options)
      if (!own.count(s.name) && seen.insert(s.name).second) out.push_back({s.name});
  out.push_back({"no-such-option"});
  return out;
}

}  // namespace

TEST(LabOptions, EveryLabRefusesEveryOptionItDoesNotDeclare) {
  int tried = 0;
  for (const LabInfo& lab : lab_registry())
    for (const Flag& f : undeclared_for(lab)) {
      const std::string args = "run " + lab.name + " --" + f.name + (f.takes_value ? " 1" : "");
      const test::CliOutput o = test::run_dtlab(args);
      ++tried;
      EXPECT_EQ(o.code, 2) << "dtlab " << args << "\n" << o.err;
      EXPECT_NE(o.err.find("--" + f.name), std::string::npos) << "dtlab " << args << " must name the option:\n"
                                                              << o.err;
      EXPECT_NE(o.err.find("its options are"), std::string::npos)
          << "dtlab " << args << " should list the lab's options:\n"
          << o.err;
    }
  EXPECT_GE(tried, 10) << "too few options to try: is the registry empty?";
}

TEST(LabOptions, EveryDeclaredOptionIsListedInTheLabsHelp) {
  for (const LabInfo& lab : lab_registry()) {
    const test::CliOutput o = test::run_dtlab("run " + lab.name + " --help");
    EXPECT_EQ(o.code, 0) << lab.name;
    for (const OptionSpec& s : lab.options) {
      EXPECT_NE(o.out.find("--" + s.name), std::string::npos) << lab.name << " --help lacks --" << s.name;
      EXPECT_NE(o.out.find(s.describe_valid().substr(0, 20)), std::string::npos)
          << lab.name << " --help does not say what --" << s.name << " takes";
    }
  }
}

TEST(LabOptions, ValuesOutsideTheDeclaredRangeNameTheOptionAndTheRange) {
  for (const LabInfo& lab : lab_registry())
    for (const OptionSpec& s : lab.options) {
      if (s.kind == OptionKind::path) continue;  // any text is a file name; opening it is the check
      std::vector<std::string> bad = {"", "nan", "12Q"};
      if (s.kind != OptionKind::choice) {
        bad.push_back(std::to_string(s.max * 2 + 1));
        bad.push_back("-1");
      }
      for (const std::string& v : bad) {
        LabConfig cfg;
        cfg.options.set(s.name, v);
        try {
          with_defaults(lab, cfg);
          ADD_FAILURE() << lab.name << " --" << s.name << " '" << v << "' was accepted";
        } catch (const UsageError& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find("--" + s.name), std::string::npos) << what;
          EXPECT_NE(what.find(s.describe_valid()), std::string::npos) << what;
        }
      }
    }
}

// given() tells what the user typed from what validate() filled in, even at the default
// value, and a second validate() (a copy revalidated) does not turn defaults into "given".
TEST(LabOptions, GivenMeansTypedEvenAtTheDefaultValue) {
  const LabInfo* lab = find_lab("grid");
  ASSERT_NE(lab, nullptr);
  LabConfig cfg;
  cfg.options.set("heads", "4");  // the default value, typed
  LabConfig validated = with_defaults(*lab, cfg);
  EXPECT_TRUE(validated.options.given("heads"));
  EXPECT_FALSE(validated.options.given("vocab"));
  EXPECT_TRUE(validated.options.has("vocab"));  // filled in, readable
  validated = with_defaults(*lab, validated);
  EXPECT_FALSE(validated.options.given("vocab"));
}
