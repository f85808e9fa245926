// dtlab-viz --compare's model (viz/model/compare_model.h): report rows paired by id and by
// metric across cases, differences and ratios, and the aligned windows, on crafted reports
// whose answers are written out by hand.
#include "viz/model/compare_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace dtl::viz;

namespace {
nlohmann::json report(std::vector<std::pair<std::string, double>> rows, const char* title = nullptr) {
  nlohmann::json r = {{"rows", nlohmann::json::array()}};
  for (const auto& [id, v] : rows)
    r["rows"].push_back({{"id", id}, {"label", "L " + id}, {"unit", "s"}, {"measured", v}});
  if (title) r["value_title"] = title;
  return r;
}
}  // namespace

// The same ids pair; a row only one run has is kept with the other side empty.
TEST(CompareRows, SameIdsPairAndTheRestStayAlone) {
  const auto rows = compare_rows(report({{"1f1b.step_time", 2.0}, {"1f1b.bubble", 0.25}, {"only_a", 1}}),
                                 report({{"1f1b.bubble", 0.1}, {"1f1b.step_time", 1.5}, {"only_b", 3}}));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].id_a, "1f1b.step_time");
  EXPECT_EQ(rows[0].id_b, "1f1b.step_time");
  EXPECT_DOUBLE_EQ(*rows[0].difference(), 1.5 - 2.0);
  EXPECT_DOUBLE_EQ(*rows[0].ratio(), 1.5 / 2.0);
  EXPECT_DOUBLE_EQ(*rows[1].difference(), 0.1 - 0.25);
  EXPECT_EQ(rows[2].id_a, "only_a");
  EXPECT_TRUE(rows[2].id_b.empty());
  EXPECT_FALSE(rows[2].difference());
  EXPECT_EQ(rows[3].id_b, "only_b");
  EXPECT_FALSE(rows[3].a);
  EXPECT_DOUBLE_EQ(*rows[3].b, 3.0);
}

// Naive vs bucketed DDP: the cases differ, the metrics pair ("naive.step_time" with
// "bucketed.step_time"); a metric two rows of one side carry is ambiguous and stays apart.
TEST(CompareRows, DifferentCasesPairByTheirUniqueMetric) {
  const auto rows = compare_rows(report({{"naive.step_time", 4.0}, {"x.loss", 1}, {"y.loss", 2}}),
                                 report({{"bucketed.step_time", 3.0}, {"z.loss", 5}}));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].id_b, "bucketed.step_time");
  EXPECT_DOUBLE_EQ(*rows[0].difference(), -1.0);
  EXPECT_TRUE(rows[1].id_b.empty());  // x.loss: A has two "loss" rows
  EXPECT_TRUE(rows[2].id_b.empty());
  EXPECT_EQ(rows[3].id_b, "z.loss");
  EXPECT_FALSE(rows[3].a);
}

// What a trace may hold instead of a report: nothing breaks, and a zero has no ratio.
TEST(CompareRows, DamagedReportsAndZeroes) {
  EXPECT_TRUE(compare_rows(nullptr, "text").empty());
  nlohmann::json bad = {{"rows", {{{"id", 3}}, "row", {{"id", "a.m"}, {"measured", "x"}}}}};
  const auto rows = compare_rows(bad, report({{"a.m", 0}}));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].a);  // "measured": "x" is no number
  EXPECT_FALSE(compare_rows(report({{"m", 0}}), report({{"m", 2}}))[0].ratio());
  EXPECT_EQ(value_title(report({}, "simulated")), "simulated");
  EXPECT_EQ(value_title(report({})), "measured");
}

// Each window starts at its own timed step; both are as long as the longer step.
TEST(CompareAlign, StepsStartAtTheSameXOnOneScale) {
  const CompareAlignment al =
      align_runs(TimeRange{1000, 1600}, TimeRange{0, 5000}, TimeRange{70, 1070}, TimeRange{0, 9000});
  EXPECT_DOUBLE_EQ(al.anchor_a, 1000);
  EXPECT_DOUBLE_EQ(al.anchor_b, 70);
  EXPECT_DOUBLE_EQ(al.span, 1000);
  const CompareAlignment whole = align_runs(std::nullopt, TimeRange{5, 25}, std::nullopt, TimeRange{0, 0});
  EXPECT_DOUBLE_EQ(whole.anchor_a, 5);
  EXPECT_DOUBLE_EQ(whole.span, 20);
}
