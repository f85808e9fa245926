// A lab's options, declared with their types, ranges and defaults, so that the command
// line, the visualizer and the tests read them the same way and nothing is accepted and
// ignored: an option a lab does not declare is a usage error that lists the ones it has.
//
//   {"width", OptionKind::integer, "256", "hidden width of the MLP", {}, 1, 65536}
//   {"variant", OptionKind::choice, "bucketed", "how gradients are averaged", {"naive", "flat", ...}}
//
// A lab declares its options in an OptionTable (labs/option_table.h), which binds each to
// a field of the lab's settings and pairs each choice's names with its enum values.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtl {

enum class OptionKind {
  integer,  // a whole number in [min, max]
  number,   // a finite real number in [min, max]
  bytes,    // a size: 4096, 64K, 1.5M, 2G (powers of 1024), in [min, max] bytes
  choice,   // one of `choices`
  path,     // a file name, read with text(); "" (the usual default) means none
};

struct OptionSpec {
  std::string name;  // "width" → --width
  OptionKind kind = OptionKind::integer;
  std::string default_value;  // as it would be typed
  std::string help;
  std::vector<std::string> choices;    // choice: the names, in the order of the lab's enum
  double min = 0, max = 0;             // integer, number, bytes: the valid range, inclusive
  std::string describe_valid() const;  // "a whole number from 1 to 65536", "one of: a, b"
};

// The options of one lab run: the text given (or the default), validated and parsed once
// by validate(); typed reads after that.
class LabOptions {
 public:
  LabOptions() = default;
  LabOptions(std::map<std::string, std::string> text) : text_(std::move(text)) {}  // NOLINT: implicit on purpose
  LabOptions(std::initializer_list<std::pair<const std::string, std::string>> text) : text_(text) {}

  void set(const std::string& name, std::string text) { text_[name] = std::move(text); }
  // A value the program chose, not the user (dtlab-viz's live defaults): used, but not given().
  void set_default(const std::string& name, std::string text) {
    text_[name] = std::move(text);
    chosen_.insert(name);
  }
  bool has(std::string_view name) const { return text_.find(std::string(name)) != text_.end(); }
  // Whether the user gave it (validate() fills in the defaults of the rest): for options
  // one mode of a lab uses and another refuses, even when given at their default value.
  bool given(std::string_view name) const { return given_.count(name) > 0; }
  const std::map<std::string, std::string>& text() const { return text_; }
  const std::string& text(std::string_view name) const;

  // Fills defaults, parses every value by its spec, and throws UsageError naming the option
  // and its valid range for a bad value, or listing the lab's options for an unknown name.
  void validate(const std::string& lab, const std::vector<OptionSpec>& specs);

 private:
  // Typed reads, by the lab's option table only (labs/option_table.h): a lab reads its
  // settings struct, never an option by name. (Error if the lab declared no such option.)
  template <typename Options>
  friend class OptionTable;
  std::int64_t integer(std::string_view name) const;
  double number(std::string_view name) const;  // also integer and bytes options
  std::uint64_t bytes(std::string_view name) const;
  int choice_index(std::string_view name) const;

  const double& parsed(std::string_view name) const;
  std::map<std::string, std::string> text_;
  std::map<std::string, double, std::less<>> parsed_;  // integers, numbers, byte counts, choice indices
  std::set<std::string, std::less<>> given_;           // the names in text_ before the first validate()
  std::set<std::string, std::less<>> chosen_;          // set_default's: in text_, never given
};

// --batch × --seq, the tokens of a step, which the labs count in an int: a UsageError
// quoting both when the product does not fit (it used to wrap to 0 or a negative size).
int tokens_per_step(std::int64_t batch, std::int64_t seq);

}  // namespace dtl
