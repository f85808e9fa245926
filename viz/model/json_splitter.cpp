#include "viz/model/json_splitter.h"

#include <simdjson.h>

#include "core/error.h"

namespace dtl::viz {

namespace {
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool ends_scalar(char c) { return is_space(c) || c == ',' || c == ']' || c == '}'; }
bool cannot_start_value(char c) { return c == ',' || c == ':' || c == ']' || c == '}'; }

// The characters capture() must look at; a tight loop skips all others.
struct SpecialChars {
  bool on[256] = {};
  constexpr explicit SpecialChars(std::string_view chars) {
    for (char c : chars) on[static_cast<unsigned char>(c)] = true;
  }
};
constexpr SpecialChars kSpecialInString("\"\\"), kSpecialOutside("\"{}[]");
}  // namespace

JsonSplitter::JsonSplitter(std::string_view array_key, Limits limits, OnBatch on_batch)
    : limits_(limits), on_batch_(std::move(on_batch)) {
  array_key_.append(1, '"').append(array_key).append(1, '"');  // compared with the raw key text
}

void JsonSplitter::syntax(const std::string& what) const {
  throw Error("the trace is not valid JSON (" + what + "); is it a Chrome trace written by dtlab?");
}

void JsonSplitter::feed(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) i = capturing_ ? capture(s, i) : step(s, i);
  offset_ += s.size();
}

// One token of the object's level: its keys, colons and commas. Values (and keys) are
// captured whole by capture(); the "traceEvents" array has its own level, step_in_array().
std::size_t JsonSplitter::step(std::string_view s, std::size_t i) {
  const char c = s[i];
  if (is_space(c)) return i + 1;
  if (in_array_) return step_in_array(c, i);
  switch (at_) {
    case At::start:
      if (c != '{') throw Error("the trace is not a JSON object with \"traceEvents\"; is it a Chrome trace?");
      at_ = At::first_key;
      return i + 1;
    case At::first_key:
      if (c == '}') {
        at_ = At::done;
        return i + 1;
      }
      [[fallthrough]];
    case At::key:
      if (c != '"') syntax("expected a key" + where(i));
      in_key_ = true;
      key_.clear();
      begin_value(c, key_, false);
      return i;
    case At::colon:
      if (c != ':') syntax("expected ':' after a key" + where(i));
      at_ = At::value;
      return i + 1;
    case At::value:
      if (c == '[' && key_ == array_key_) {
        if (seen_array_) syntax("a second " + array_key_ + " array" + where(i));
        seen_array_ = in_array_ = true;
        at_ = At::first_element;
        return i + 1;
      }
      if (cannot_start_value(c)) syntax("expected a value" + where(i));
      if (other_.size() > 1) other_ += ',';
      other_ += key_;
      other_ += ':';
      begin_value(c, other_, false);
      return i;
    case At::comma:
      if (c != ',' && c != '}') syntax("expected ',' or '}'" + where(i));
      at_ = c == ',' ? At::key : At::done;
      return i + 1;
    default: break;
  }
  syntax("text after the end of the trace" + where(i));
}

// One token of the array's level: its commas and its end.
std::size_t JsonSplitter::step_in_array(char c, std::size_t i) {
  const bool closes = c == ']' && at_ != At::element;  // "[]" or after an event; "[1,]" is an error
  if (at_ == At::element_comma && c != ',' && !closes)
    syntax("expected ',' or ']' after event " + std::to_string(elements_ - 1) + where(i));
  if (at_ != At::element_comma && !closes) {  // an event starts here
    if (cannot_start_value(c)) syntax("expected an event" + where(i));
    if (elements_ > batch_first_) batch_ += ',';
    begin_value(c, batch_, true);
    return i;
  }
  if (closes) {
    flush();
    in_array_ = false;
  }
  at_ = closes ? At::comma : At::element;
  return i + 1;
}

std::string JsonSplitter::where(std::size_t i) const { return " at byte " + std::to_string(offset_ + i); }

void JsonSplitter::begin_value(char c, std::string& target, bool element) {
  target_ = &target;
  value_start_ = target.size();
  capturing_ = true;
  in_element_ = element;
  in_string_ = escape_ = false;
  depth_ = 0;
  scalar_ = c != '"' && c != '{' && c != '[';  // a number, true, false, null (or junk simdjson rejects)
}

// Copies the value being captured up to its end (or the block's end) into its buffer.
// Strings and brackets are tracked only to find where the value ends.
std::size_t JsonSplitter::capture(std::string_view s, std::size_t i) {
  const std::size_t from = i;
  bool done = false;
  if (scalar_) {
    while (i < s.size() && !ends_scalar(s[i])) ++i;
    done = i < s.size();
  } else {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    while (i < s.size()) {
      if (escape_) {  // the character after a backslash is never special
        escape_ = false;
        ++i;
        continue;
      }
      const bool* special = in_string_ ? kSpecialInString.on : kSpecialOutside.on;
      while (i < s.size() && !special[p[i]]) ++i;  // most of a trace: names and digits
      if (i == s.size()) break;
      const char c = s[i++];
      if (in_string_) {
        if (c == '\\') {
          escape_ = true;
        } else {
          in_string_ = false;
          done = depth_ == 0;  // a string value ends here; a string inside a container does not
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else {
        done = --depth_ == 0;
      }
      if (done) break;
    }
  }
  target_->append(s.data() + from, i - from);
  const std::uint64_t size = target_->size() - value_start_;
  if ((in_element_ || in_key_) && size > limits_.element_bytes)
    throw Error(in_key_
                    ? "the trace has a key longer than " + std::to_string(limits_.element_bytes) + " bytes (the limit)"
                    : "trace event " + std::to_string(elements_) + " is larger than " +
                          std::to_string(limits_.element_bytes) + " bytes (the limit for one event)");
  if (!in_element_ && !in_key_ && other_.size() > limits_.other_bytes)
    throw Error("the trace's data outside \"traceEvents\" is larger than " + std::to_string(limits_.other_bytes) +
                " bytes (the limit)");
  if (done) end_value();
  return i;
}

void JsonSplitter::end_value() {
  capturing_ = false;
  if (in_key_) {
    in_key_ = false;
    at_ = At::colon;
  } else if (in_element_) {
    ++elements_;
    at_ = At::element_comma;
    if (batch_.size() >= limits_.batch_bytes) flush();
  } else {
    at_ = At::comma;
  }
}

void JsonSplitter::flush() {
  if (elements_ == batch_first_) return;
  batch_ += ']';
  batch_.reserve(batch_.size() + simdjson::SIMDJSON_PADDING);  // simdjson reads past the end
  on_batch_(batch_, batch_first_);
  batch_.clear();  // keeps its capacity for the next batch
  batch_ += '[';
  batch_first_ = elements_;
}

std::string JsonSplitter::finish() {
  if (offset_ == 0) throw Error("the trace is not valid JSON (the file is empty); write it again with --trace");
  if (at_ != At::done)
    throw Error("the trace is not valid JSON (it ends inside " +
                (in_array_ ? "\"traceEvents\", after " + std::to_string(elements_) + " events"
                           : std::string("the top-level object")) +
                "); was the file cut short? write it again with --trace");
  if (!seen_array_) throw Error("the trace has no \"traceEvents\" array; is it a Chrome trace?");
  return other_ + "}";
}

}  // namespace dtl::viz
