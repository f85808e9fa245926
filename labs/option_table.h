// A lab's options declared once, typed: each row binds a flag to a field of the lab's
// settings struct, with its default, its range or its names, and its help. The command
// line, `--help`, dtlab-viz and the tests read the rows as OptionSpecs (specs()); the lab
// reads its struct (parse()), never an option by its name, and so does a view from a
// trace's metadata (from_meta()), where the launch wrote the settings (text_of()).
//
//   const OptionTable<ZeroSettings>& zero_option_table() {
//     static const auto table = OptionTable<ZeroSettings>()
//         .choice("stage", &ZeroSettings::stage, ZeroStage::all, kZeroStageNames, "what is sharded")
//         .integer("unit", &ZeroSettings::layers_per_unit, 1, 1, 1024, "layers per sharding unit");
//     return table;
//   }
//   ZeroSettings s = zero_option_table().parse(cfg.options);  // validated by with_defaults
//   if (zero_option_table().given(cfg.options, &ZeroSettings::layers_per_unit)) ...
//   std::optional<ZeroSettings> traced = zero_option_table().from_meta(trace_data.meta);  // a view
//
// A field is a member pointer or, for a field inside a member, a function returning it:
// [](ZeroSettings& s) -> int& { return s.shape.width; }. A choice's names pair each enum
// value with its word, so no enum is ever read by its position in a list.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/error.h"
#include "labs/options.h"

namespace dtl {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;  // as typed on the command line
};
template <typename Enum>
using EnumNames = std::vector<EnumName<Enum>>;

// The word of `value` in `names` (Error if the table lacks it: a bug in the lab).
template <typename Enum>
const char* name_of(const EnumNames<Enum>& names, Enum value) {
  for (const EnumName<Enum>& n : names)
    if (n.value == value) return n.name;
  throw Error("an enum value has no name in its option table");
}

template <typename Options>
class OptionTable {
 public:
  // The type a field (member pointer or function) refers to.
  template <typename F>
  using FieldType = std::remove_cvref_t<std::invoke_result_t<F, Options&>>;

  template <typename F>
  OptionTable& integer(std::string flag, F field, FieldType<F> default_value, double min, double max,
                       std::string help) {
    static_assert(std::is_integral_v<FieldType<F>>, "an integer option binds an integer field");
    OptionSpec spec{std::move(flag), OptionKind::integer, std::to_string(default_value), std::move(help), {}, min, max};
    return add(
        std::move(spec), field,
        [field](Options& o, const LabOptions& given, const std::string& name) {
          std::invoke(field, o) = FieldType<F>(given.integer(name));
        },
        [field](Options& o) { return std::to_string(std::invoke(field, o)); });
  }

  template <typename F>
  OptionTable& number(std::string flag, F field, FieldType<F> default_value, double min, double max, std::string help) {
    static_assert(std::is_floating_point_v<FieldType<F>>, "a number option binds a floating-point field");
    OptionSpec spec{std::move(flag), OptionKind::number, number_text(default_value), std::move(help), {}, min, max};
    return add(
        std::move(spec), field,
        [field](Options& o, const LabOptions& given, const std::string& name) {
          std::invoke(field, o) = FieldType<F>(given.number(name));
        },
        [field](Options& o) { return number_text(std::invoke(field, o)); });
  }

  template <typename F>
  OptionTable& choice(std::string flag, F field, FieldType<F> default_value, const EnumNames<FieldType<F>>& names,
                      std::string help) {
    OptionSpec spec{std::move(flag), OptionKind::choice, name_of(names, default_value), std::move(help), {}, 0, 0};
    for (const auto& n : names) spec.choices.push_back(n.name);
    return add(
        std::move(spec), field,
        [field, names](Options& o, const LabOptions& given, const std::string& name) {
          std::invoke(field, o) = names[std::size_t(given.choice_index(name))].value;
        },
        [field, names](Options& o) { return std::string(name_of(names, std::invoke(field, o))); });
  }

  // A file name ("" by default: none); `writes`: the lab writes it (the command line then
  // refuses it naming the same file as another output, or as an input).
  template <typename F>
  OptionTable& path(std::string flag, F field, std::string help, bool writes = false) {
    static_assert(std::is_same_v<FieldType<F>, std::string>, "a path option binds a std::string field");
    OptionSpec spec{std::move(flag), OptionKind::path, "", std::move(help), {}, 0, 0, writes};
    return add(
        std::move(spec), field,
        [field](Options& o, const LabOptions& given, const std::string& name) {
          std::invoke(field, o) = given.text(name);
        },
        [field](Options& o) { return std::invoke(field, o); });
  }

  // The rows as the command line, `--help` and the viewer read them, in the table's order.
  std::vector<OptionSpec> specs() const {
    std::vector<OptionSpec> out;
    for (const Row& r : rows_) out.push_back(r.spec);
    return out;
  }

  // `base` with every field of the table set from validated options (LabOptions::validate).
  Options parse(const LabOptions& given, Options base = {}) const {
    for (const Row& r : rows_) r.read(base, given, r.spec.name);
    return base;
  }

  // The options as the lab reads them, written back as text: {flag: value}. A row that
  // binds the wrong field, or one another row binds too, does not round-trip (tests/cli).
  std::map<std::string, std::string> text_of(Options o) const {
    std::map<std::string, std::string> out;
    for (const Row& r : rows_) out[r.spec.name] = r.write(o);
    return out;
  }
  // The settings a run's trace recorded (the launch writes text_of(parse(options)) into its
  // metadata, labs/launch.cpp), typed again: how a view reads the run's configuration, never
  // by a flag's name. An option the trace lacks (an older trace) or whose name the run-wide
  // metadata owns (run_wide_meta_key) takes its default; nullopt when the trace records none
  // of the table's options, or a value the option does not take (a foreign or edited trace).
  std::optional<Options> from_meta(const std::map<std::string, std::string>& meta) const {
    LabOptions recorded_options;
    for (const Row& r : rows_)
      if (const auto it = meta.find(r.spec.name);  // (an empty value: a path the run was not given)
          it != meta.end() && !it->second.empty() && !run_wide_meta_key(r.spec.name))
        recorded_options.set(r.spec.name, it->second);
    if (recorded_options.text().empty()) return std::nullopt;
    try {
      recorded_options.validate("traced", specs());
    } catch (const UsageError&) { return std::nullopt; }
    return parse(recorded_options);
  }
  // Whether the trace's metadata records the option bound to `field` (else from_meta holds its
  // default, which a view may not want to show as the run's).
  template <typename F>
  bool recorded(const std::map<std::string, std::string>& meta, F field) const {
    const std::string& name = row_of(field).spec.name;
    return meta.count(name) > 0 && !run_wide_meta_key(name);
  }

  // The settings as text both ways, type-erased for LabInfo::settings_text (the table
  // outlives the lab registry): parse then text_of; from_meta then text_of.
  SettingsText settings_text() const {
    SettingsText t;
    t.write = [this](const LabOptions& given) { return text_of(parse(given)); };
    t.read = [this](const std::map<std::string, std::string>& meta) {
      const std::optional<Options> o = from_meta(meta);
      return o ? text_of(*o) : std::map<std::string, std::string>{};
    };
    return t;
  }

  // Whether the user gave the option bound to `field` (an option one mode reads and
  // another refuses is refused when given, even at its default).
  template <typename F>
  bool given(const LabOptions& options, F field) const {
    return options.given(row_of(field).spec.name);
  }
  // "--unit": the flag of `field`, for messages.
  template <typename F>
  std::string flag(F field) const {
    return "--" + row_of(field).spec.name;
  }

 private:
  struct Row {
    OptionSpec spec;
    std::function<void(Options&, const LabOptions&, const std::string&)> read;
    std::function<std::string(Options&)> write;
    std::ptrdiff_t offset;  // where the field sits in Options: how given() and flag() find the row
    std::type_index type;
  };

  template <typename F>
  static std::ptrdiff_t offset_of(F field) {
    static Options probe{};
    return reinterpret_cast<const char*>(&std::invoke(field, probe)) - reinterpret_cast<const char*>(&probe);
  }

  template <typename F, typename Read, typename Write>
  OptionTable& add(OptionSpec spec, F field, Read read, Write write) {
    rows_.push_back(Row{std::move(spec), std::move(read), std::move(write), offset_of(field), typeid(FieldType<F>)});
    return *this;
  }

  // The shortest text that reads back as `v` in the field's own type (0.003, not a float's
  // 0.00300000003).
  template <typename T>
  static std::string number_text(T v) {
    char text[64];
    for (int digits = 1; digits <= 17; ++digits) {  // 17 always reads back a double
      std::snprintf(text, sizeof text, "%.*g", digits, double(v));
      if (T(std::strtod(text, nullptr)) == v) break;
    }
    return text;
  }

  template <typename F>
  const Row& row_of(F field) const {
    const std::ptrdiff_t at = offset_of(field);
    for (const Row& r : rows_)
      if (r.offset == at && r.type == std::type_index(typeid(FieldType<F>))) return r;
    throw Error("no option of this lab's table binds that field (a bug in the lab)");
  }

  std::vector<Row> rows_;
};

}  // namespace dtl
