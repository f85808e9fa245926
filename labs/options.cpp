#include "labs/options.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/error.h"
#include "core/util/units.h"

namespace dtl {

namespace {

std::string plain(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e18)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string list(const std::vector<std::string>& names) {
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return all;
}

// The value of `text` by `spec`, or a UsageError that names the option and what is valid.
double parse_value(const OptionSpec& spec, const std::string& text) {
  const auto bad = [&] {
    return UsageError("--" + spec.name + " '" + text + "' is not valid: give " + spec.describe_valid());
  };
  double v = 0;
  switch (spec.kind) {
    case OptionKind::choice: {
      for (std::size_t i = 0; i < spec.choices.size(); ++i)
        if (spec.choices[i] == text) return double(i);
      throw bad();
    }
    case OptionKind::path:  // any text names a file; opening it is where a bad one fails
      return 0;
    case OptionKind::bytes: v = double(parse_size(text, "--" + spec.name)); break;
    case OptionKind::integer:
    case OptionKind::number: {
      char* end = nullptr;
      v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v)) throw bad();
      if (spec.kind == OptionKind::integer && v != std::floor(v)) throw bad();
      break;
    }
  }
  if (!(v >= spec.min && v <= spec.max)) throw bad();
  return v;
}

}  // namespace

std::string OptionSpec::describe_valid() const {
  switch (kind) {
    case OptionKind::choice: return "one of: " + list(choices);
    case OptionKind::path: return "a file path";
    case OptionKind::integer: return "a whole number from " + plain(min) + " to " + plain(max);
    case OptionKind::number: return "a number from " + plain(min) + " to " + plain(max);
    case OptionKind::bytes:
      return "a size from " + format_size(std::uint64_t(min)) + " to " + format_size(std::uint64_t(max)) +
             " bytes (K, M, G = powers of 1024)";
  }
  return "";
}

const std::string& LabOptions::text(std::string_view name) const {
  auto it = text_.find(std::string(name));
  if (it == text_.end()) throw Error("lab option '" + std::string(name) + "' is not set (the lab did not declare it)");
  return it->second;
}

void LabOptions::validate(const std::string& lab, const std::vector<OptionSpec>& specs) {
  for (const auto& [name, value] : text_) {
    bool known = false;
    for (const OptionSpec& s : specs) known = known || s.name == name;
    if (known) continue;
    std::vector<std::string> names;
    for (const OptionSpec& s : specs) names.push_back("--" + s.name);
    throw UsageError("the " + lab + " lab has no option --" + name +
                     (names.empty() ? std::string(" (it takes no lab options)") : "; its options are " + list(names)) +
                     " (see 'dtlab run " + lab + " --help')");
  }
  if (parsed_.empty())  // the first validation: what is in text_ now came from the user
    for (const auto& [name, value] : text_)
      if (!chosen_.count(name)) given_.insert(name);
  parsed_.clear();
  for (const OptionSpec& s : specs) {
    auto it = text_.find(s.name);
    if (it == text_.end()) it = text_.emplace(s.name, s.default_value).first;
    parsed_[s.name] = parse_value(s, it->second);
  }
}

const double& LabOptions::parsed(std::string_view name) const {
  auto it = parsed_.find(name);
  if (it == parsed_.end())
    throw Error("lab option '" + std::string(name) + "' was read before validate(), or the lab did not declare it");
  return it->second;
}

std::int64_t LabOptions::integer(std::string_view name) const { return std::int64_t(parsed(name)); }
double LabOptions::number(std::string_view name) const { return parsed(name); }
std::uint64_t LabOptions::bytes(std::string_view name) const { return std::uint64_t(parsed(name)); }
int LabOptions::choice_index(std::string_view name) const { return int(parsed(name)); }

int tokens_per_step(std::int64_t batch, std::int64_t seq) {
  const std::int64_t tokens = batch * seq;  // each at most 2^24: no overflow in 64 bits
  if (tokens > std::numeric_limits<int>::max())
    throw UsageError("--batch " + std::to_string(batch) + " × --seq " + std::to_string(seq) + " = " +
                     std::to_string(tokens) +
                     " tokens per step, more than the labs count (2³¹ − 1): lower --batch or --seq");
  return int(tokens);
}

}  // namespace dtl
