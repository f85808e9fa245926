// Output that fits the terminal (issue 50): every lab's small run (LabInfo::small_run) and its
// step-through (`--step`), at COLUMNS=80 and 120, print no line wider than the terminal and
// break no word across lines; a number stays with its unit. The words are checked against the
// same run at 200 columns (the widest dtlab wraps to): a line break that cuts a word leaves
// two pieces of which one is no word of the wide run, while joined they are one.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "labs/lab.h"
#include "labs/report_format.h"
#include "tests/cli/cli_util.h"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// The words of only letters ("rank", "KiB"), each once.
std::set<std::string> vocabulary(const std::string& text) {
  std::set<std::string> words;
  std::string word;
  for (const char c : text + " ") {
    if (letter(c)) {
      word += c;
    } else {
      if (!word.empty()) words.insert(word);
      word.clear();
    }
  }
  return words;
}

// The letters a line ends with (none after a space or a mark) and those the next begins with.
std::string trailing_letters(const std::string& line) {
  std::size_t i = line.size();
  while (i > 0 && letter(line[i - 1])) --i;
  return line.substr(i);
}
std::string leading_letters(const std::string& line) {
  const std::size_t from = line.find_first_not_of(' ');
  if (from == std::string::npos) return {};
  std::size_t i = from;
  while (i < line.size() && letter(line[i])) ++i;
  return line.substr(from, i - from);
}

bool is_unit(const std::string& w) {
  static const std::set<std::string> units = {"B", "KiB", "MiB", "GiB", "ns", "µs", "ms", "s", "%", "GB/s", "×"};
  return units.count(w) > 0;
}

// What is wrong with `text` printed at `width` columns (empty: nothing), `wide` the same run at 200.
std::string width_problems(const std::string& text, std::size_t width, const std::set<std::string>& wide) {
  std::string problems;
  const std::vector<std::string> lines = lines_of(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (dtl::display_width(lines[i]) > width)
      problems += "wider than " + std::to_string(width) + ": " + lines[i] + "\n";
    if (i + 1 == lines.size()) continue;
    const std::string a = trailing_letters(lines[i]), b = leading_letters(lines[i + 1]);
    if (!a.empty() && !b.empty() && wide.count(a + b) && (!wide.count(a) || !wide.count(b)))
      problems += "a word broken: '" + a + "' / '" + b + "' in\n  " + lines[i] + "\n  " + lines[i + 1] + "\n";
    const std::string& next = lines[i + 1];
    const std::size_t from = next.find_first_not_of(' ');
    const std::string first = from == std::string::npos ? "" : next.substr(from, next.find(' ', from) - from);
    if (!lines[i].empty() && std::isdigit(static_cast<unsigned char>(lines[i].back())) && is_unit(first))
      problems += "a number apart from its unit:\n  " + lines[i] + "\n  " + next + "\n";
  }
  return problems;
}

dtl::test::CliOutput run_at(std::size_t columns, const std::string& args) {
  return dtl::test::run_dtlab_shell("COLUMNS=" + std::to_string(columns) + " " + DTLAB_EXE + " " + args +
                                    " < /dev/null");
}

}  // namespace

TEST(Width, EveryLabsRunAndStepThroughFitAt80And120Columns) {
  for (const dtl::LabInfo& lab : dtl::lab_registry()) {
    std::string small = "run " + lab.name;
    for (const auto& [flag, value] : lab.small_run) small += " --" + flag + " " + value;
    std::vector<std::string> runs = {small};
    if (lab.uses(dtl::RunOption::step)) runs.push_back(small + " --step");
    for (const std::string& args : runs) {
      const dtl::test::CliOutput wide = run_at(200, args);
      ASSERT_EQ(wide.code, 0) << args << "\n" << wide.err;
      const std::set<std::string> words = vocabulary(wide.out);
      for (const std::size_t width : {80, 120}) {
        const dtl::test::CliOutput o = run_at(width, args);
        ASSERT_EQ(o.code, 0) << args << "\n" << o.err;
        const std::string problems = width_problems(o.out, width, words);
        EXPECT_TRUE(problems.empty()) << "COLUMNS=" << width << " dtlab " << args << "\n" << problems;
        std::size_t widest = 0;
        for (const std::string& line : lines_of(o.out)) widest = std::max(widest, dtl::display_width(line));
        std::printf("COLUMNS=%zu %-60.60s %4zu lines, widest %zu\n", width, args.c_str(), lines_of(o.out).size(),
                    widest);
      }
    }
  }
}

// The checks themselves catch what they are for.
TEST(Width, TheChecksCatchABrokenWordASplitNumberAndALongLine) {
  const std::set<std::string> wide = {"the", "master", "weights", "KiB"};
  EXPECT_NE(width_problems("the m\naster weights\n", 80, wide).find("a word broken"), std::string::npos);
  EXPECT_NE(width_problems("weights 64\n    KiB\n", 80, wide).find("apart from its unit"), std::string::npos);
  EXPECT_NE(width_problems(std::string(81, 'x') + "\n", 80, wide).find("wider than 80"), std::string::npos);
  EXPECT_EQ(width_problems("the master\nweights 64 KiB\n", 80, wide), "");
}

// A deadlock's messages (the watchdog's "still waiting" after 2 s and the run's failure, on
// stderr) fit the terminal too: the pipeline's lines name the activation each stage waits for
// and run past 80 columns unwrapped. Checked against the same deadlock at 200 columns.
TEST(Width, ADeadlocksMessagesFitAt80Columns) {
  const std::string args =
      "run pipeline --schedule 1f1b --width 32 --depth 4 --batch 8 --micro-batches 4 --steps 1 --repeat 1 "
      "--inject-hang 1:2";
  const dtl::test::CliOutput wide = run_at(200, args);
  ASSERT_EQ(wide.code, 1) << wide.err;
  ASSERT_NE(wide.err.find("still waiting"), std::string::npos) << wide.err;
  std::size_t widest_unwrapped = 0;
  for (const std::string& line : lines_of(wide.err))
    widest_unwrapped = std::max(widest_unwrapped, dtl::display_width(line));
  EXPECT_GT(widest_unwrapped, 80u) << "the check needs a message longer than 80 columns:\n" << wide.err;
  const dtl::test::CliOutput o = run_at(80, args);
  ASSERT_EQ(o.code, 1) << o.err;
  const std::string problems = width_problems(o.err, 80, vocabulary(wide.err));
  EXPECT_TRUE(problems.empty()) << o.err << "\n" << problems;
  std::printf("deadlock messages: widest %zu columns at 200, %zu stderr lines at 80\n", widest_unwrapped,
              lines_of(o.err).size());
}
