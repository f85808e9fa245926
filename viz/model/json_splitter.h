// JsonSplitter: reads a JSON object {"key": value, ...} in blocks of any size and hands out
// the elements of one array member ("traceEvents") in batches, so a trace is parsed with
// memory that follows its events, not its file: a 1.2 GB trace of 512 ranks never sits in
// memory whole (simdjson's DOM wants about 14 bytes of address space per byte of input).
//
// The splitter only tracks what separates elements (strings, brackets, commas at the two
// outer levels); simdjson validates every byte: each batch is parsed as "[e1,e2,...]" and
// every other member is kept as the text of an object, parsed at the end. A bracket
// mismatch inside an element leaves that element's text invalid, so it cannot slip through.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dtl::viz {

class JsonSplitter {
 public:
  struct Limits {
    std::uint64_t element_bytes;  // one element of the array member
    std::uint64_t other_bytes;    // all other members together
    std::uint64_t batch_bytes;    // a batch is handed out once it is this large
  };
  // on_batch(json, first): json is "[...]" with simdjson's padding readable after it;
  // first is the index of its first element in the array.
  using OnBatch = std::function<void(const std::string& json, std::uint64_t first)>;

  JsonSplitter(std::string_view array_key, Limits limits, OnBatch on_batch);
  void feed(std::string_view block);
  // Throws dtl::Error if the document is incomplete or has no such array member. Returns
  // every other member as the text of one JSON object ("{...}", not yet validated).
  std::string finish();

 private:
  enum class At { start, first_key, key, colon, value, comma, first_element, element, element_comma, done };
  std::size_t step(std::string_view s, std::size_t i);  // the object's grammar, one token
  std::size_t step_in_array(char c, std::size_t i);     // the array's grammar, one token
  std::size_t capture(std::string_view s, std::size_t i);
  void begin_value(char c, std::string& target, bool element);
  std::string where(std::size_t i) const;  // " at byte N", for errors
  void end_value();
  void flush();  // hands out the batch
  [[noreturn]] void syntax(const std::string& what) const;

  std::string key_, array_key_;
  Limits limits_;
  OnBatch on_batch_;
  At at_ = At::start;
  bool capturing_ = false, in_element_ = false, in_array_ = false, seen_array_ = false;
  bool in_string_ = false, escape_ = false, scalar_ = false, in_key_ = false;
  std::int64_t depth_ = 0;
  std::uint64_t offset_ = 0;       // bytes consumed before the current block
  std::uint64_t value_start_ = 0;  // size of the target buffer when the value began
  std::uint64_t elements_ = 0, batch_first_ = 0;
  std::string batch_ = "[", other_ = "{";
  std::string* target_ = nullptr;  // where the value being captured goes
};

}  // namespace dtl::viz
