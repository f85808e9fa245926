// The labs' option tables (labs/option_table.h): every flag of every lab round-trips
// through the lab's settings struct (parsed into its field and written back, the others
// left at their defaults), and a wrong value of any flag exits `dtlab run` with 2 and a
// message naming the flag and what it takes. Also the table's own mechanics on a toy struct.
#include "labs/option_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/lab.h"
#include "tests/cli/cli_util.h"

using namespace dtl;

namespace {

// As the table writes a value back: an integer in full, a number in the fewest digits that
// read back as it.
std::string canonical(const OptionSpec& s, double v) {
  char buf[64];
  if (s.kind == OptionKind::integer) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int digits = 1; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Values to give `s`, each written as its table writes it back: every name of a choice;
// the ends and a middle of a range; a file name.
std::vector<std::string> values_of(const OptionSpec& s) {
  switch (s.kind) {
    case OptionKind::choice: return s.choices;
    case OptionKind::path: return {"dir/model.safetensors"};
    case OptionKind::integer:
      return {canonical(s, s.min), canonical(s, s.max), canonical(s, std::floor((s.min + s.max) / 3))};
    case OptionKind::number:
      return {canonical(s, s.min), canonical(s, s.max), canonical(s, s.min + (s.max - s.min) / 4)};
    case OptionKind::bytes: return {canonical(s, s.min), canonical(s, s.max)};
  }
  return {};
}

}  // namespace

TEST(OptionTable, EveryFlagOfEveryLabRoundTripsThroughItsSettings) {
  int tried = 0;
  for (const LabInfo& lab : lab_registry()) {
    ASSERT_TRUE(lab.read_back) << lab.name << " has no option table's read_back (labs/option_table.h)";
    const auto defaults = lab.read_back(with_defaults(lab, LabConfig{}).options);
    for (const OptionSpec& s : lab.options)
      EXPECT_EQ(defaults.at(s.name), s.default_value) << lab.name << " --" << s.name;
    for (const OptionSpec& s : lab.options)
      for (const std::string& value : values_of(s)) {
        LabConfig cfg;
        cfg.options.set(s.name, value);
        const auto back = lab.read_back(with_defaults(lab, cfg).options);
        ASSERT_EQ(back.size(), lab.options.size()) << lab.name;
        for (const OptionSpec& other : lab.options)  // this flag's field holds the value; every other, its default
          EXPECT_EQ(back.at(other.name), other.name == s.name ? value : other.default_value)
              << "dtlab run " << lab.name << " --" << s.name << " " << value << ": --" << other.name << " read back";
        ++tried;
      }
  }
  std::printf("%d values round-tripped\n", tried);
  EXPECT_GE(tried, 150);
}

TEST(OptionTable, AWrongValueOfAnyFlagExitsTwoNamingTheFlag) {
  int tried = 0;
  for (const LabInfo& lab : lab_registry())
    for (const OptionSpec& s : lab.options) {
      if (s.kind == OptionKind::path) continue;  // any text names a file
      const std::string args = "run " + lab.name + " --" + s.name + " 12Q";
      const test::CliOutput o = test::run_dtlab(args);
      EXPECT_EQ(o.code, 2) << "dtlab " << args << "\n" << o.err;
      EXPECT_NE(o.err.find("--" + s.name + " '12Q'"), std::string::npos) << "dtlab " << args << "\n" << o.err;
      EXPECT_NE(o.err.find(s.describe_valid()), std::string::npos) << "dtlab " << args << "\n" << o.err;
      ++tried;
    }
  std::printf("%d flags refused a wrong value\n", tried);
  EXPECT_GE(tried, 60);
}

namespace {

enum class Color { red, green };
struct Inner {
  int depth = 0;
};
struct Toy {
  int width = 0;
  Inner inner;
  double rate = 0;
  Color color = Color::red;
  bool on = false;
};

const OptionTable<Toy>& toy_table() {
  static const OptionTable<Toy> table = [] {
    OptionTable<Toy> t;
    t.integer("width", &Toy::width, 8, 1, 64, "width")
        .integer(
            "depth", [](Toy& x) -> int& { return x.inner.depth; }, 3, 1, 9, "depth")
        .number("rate", &Toy::rate, 0.5, 0, 1, "rate")
        .choice("color", &Toy::color, Color::green, {{Color::red, "red"}, {Color::green, "green"}}, "color")
        .choice("on", &Toy::on, true, {{false, "off"}, {true, "on"}}, "switch");
    return t;
  }();
  return table;
}

LabOptions validated(LabOptions o) {
  o.validate("toy", toy_table().specs());
  return o;
}

}  // namespace

TEST(OptionTable, ParsesIntoFieldsAndKnowsWhichWereGiven) {
  const LabOptions o = validated({{"depth", "3"}, {"color", "red"}, {"rate", "0.25"}});
  const Toy t = toy_table().parse(o);
  EXPECT_EQ(t.width, 8);  // the table's default, not the struct's
  EXPECT_EQ(t.inner.depth, 3);
  EXPECT_EQ(t.rate, 0.25);
  EXPECT_EQ(t.color, Color::red);  // by its name, not its position
  EXPECT_TRUE(t.on);
  const OptionTable<Toy>& table = toy_table();
  EXPECT_TRUE(table.given(o, [](Toy& x) -> int& { return x.inner.depth; }));  // typed at its default value
  EXPECT_FALSE(table.given(o, &Toy::width));
  EXPECT_TRUE(table.given(o, &Toy::color));
  EXPECT_EQ(table.flag(&Toy::rate), "--rate");
  EXPECT_EQ(table.flag([](Toy& x) -> int& { return x.inner.depth; }), "--depth");
  // inner sits where inner.depth does, but is not an int: no row binds it.
  EXPECT_THROW(table.flag(&Toy::inner), Error);
  const auto specs = table.specs();
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[2].default_value, "0.5");
  EXPECT_EQ(specs[3].default_value, "green");
  EXPECT_EQ((specs[3].choices), (std::vector<std::string>{"red", "green"}));
}

TEST(OptionTable, AValueOutsideItsRangeNamesTheFlag) {
  try {
    validated({{"depth", "10"}});
    ADD_FAILURE() << "--depth 10 was accepted (range 1 to 9)";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--depth '10' is not valid: give a whole number from 1 to 9"),
              std::string::npos)
        << e.what();
  }
}
