// Hostile variants of a real trace for the loader fuzz (trace_fuzz_test.cpp): cut, bit-
// flipped and byte-swapped files, fields set to huge, negative or wrongly typed values,
// absurd metadata, deep nesting, flows without ends, duplicate and negative timestamps,
// enormous rank counts, and damaged .dtlt companions. The mutations are fixed (seeded);
// the base trace is a real run, so its timings differ: the fuzz test keeps the input of
// any failing case.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace dtl::test {

struct HostileCase {
  std::string name;
  std::string bytes;    // the file's content
  bool binary = false;  // written as NAME.dtlt and opened as such (else NAME.json)
};

// Replaces the numbers after "key": — the first occurrence only, or every one.
inline std::string set_field(const std::string& json, const std::string& key, const std::string& value, bool every) {
  const std::string pattern = "\"" + key + "\":";
  std::string out;
  std::size_t from = 0, at;
  while ((at = json.find(pattern, from)) != std::string::npos) {
    std::size_t end = at + pattern.size();
    while (end < json.size() && std::strchr("-0123456789.eE+", json[end]) && json[end] != '\0') ++end;
    if (end == at + pattern.size()) {  // not a number (a string or an object): leave it
      out.append(json, from, end - from);
      from = end;
      continue;
    }
    out.append(json, from, at - from).append(pattern).append(value);
    from = end;
    if (!every) break;
  }
  return out.append(json, from, std::string::npos);
}

inline std::string set_meta(const std::string& json, const std::string& key, const std::string& value) {
  const std::string pattern = "\"" + key + "\":\"";
  const std::size_t at = json.find(pattern);
  if (at == std::string::npos) return json;
  const std::size_t end = json.find('"', at + pattern.size());
  return json.substr(0, at + pattern.size()) + value + json.substr(end);
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

// Drops the lines (the writer puts one event per line) that start with `prefix`.
inline std::string drop_lines(const std::string& json, const std::string& prefix) {
  std::string out;
  for (std::size_t from = 0; from < json.size();) {
    std::size_t end = json.find('\n', from);
    end = end == std::string::npos ? json.size() : end + 1;
    if (json.compare(from, prefix.size(), prefix) != 0) out.append(json, from, end - from);
    from = end;
  }
  return replace_all(out, ",\n]", "\n]");  // the last event may have been dropped
}

// A trace of `n` spans on one track that each overlap the previous ones without nesting:
// the worst case for lane assignment.
inline std::string staggered_spans(int n) {
  std::string out = "{\"traceEvents\":[";
  for (int i = 0; i < n; ++i) {
    if (i) out += ',';
    out += "{\"ph\":\"X\",\"cat\":\"compute\",\"name\":\"c\",\"pid\":0,\"tid\":0,\"ts\":" + std::to_string(i) +
           ",\"dur\":" + std::to_string(n) + "}";
  }
  return out + "]}";
}

inline std::string nested(int depth) {
  return std::string(std::size_t(depth), '[') + std::string(std::size_t(depth), ']');
}

inline std::vector<HostileCase> json_cases(const std::string& base) {
  std::vector<HostileCase> cases;
  auto add = [&](std::string name, std::string bytes) { cases.push_back({std::move(name), std::move(bytes), false}); };
  for (int k = 0; k < 60; ++k)
    add("truncated at " + std::to_string(k) + "/60", base.substr(0, base.size() * std::size_t(k) / 60));
  std::mt19937_64 rng(14);
  for (int k = 0; k < 150; ++k) {
    std::string s = base;
    const std::size_t at = rng() % s.size();
    s[at] = char(s[at] ^ (1 << (rng() % 8)));
    add("bit flip " + std::to_string(k) + " at byte " + std::to_string(at), s);
  }
  const char swaps[] = {'{', '}', '[', ']', '"', ',', ':', '\\', '\0', '\xff', '-', '9', 'e', '\n'};
  for (int k = 0; k < 80; ++k) {
    std::string s = base;
    const std::size_t at = rng() % s.size();
    s[at] = swaps[rng() % sizeof swaps];
    add("byte swap " + std::to_string(k) + " at byte " + std::to_string(at), s);
  }
  const char* fields[] = {"pid",         "tid",  "ts",   "dur", "bytes", "peer",  "chunk",
                          "chunk_count", "flow", "step", "tag", "id",    "reduce"};
  const char* values[] = {"-1",
                          "0",
                          "65535",
                          "16383",
                          "16384",
                          "2147483648",
                          "4294967296",
                          "9223372036854775807",
                          "18446744073709551615",
                          "1e300",
                          "-1e300",
                          "1.5",
                          "1e12",
                          "-1e12",
                          "\"x\"",
                          "null",
                          "true",
                          "[]",
                          "{}",
                          "1e-300"};
  for (const char* f : fields)
    for (const char* v : values) add(std::string("first '") + f + "' = " + v, set_field(base, f, v, false));
  for (const char* f : {"pid", "ts", "dur", "peer", "bytes", "chunk"})
    for (const char* v : {"16383", "-1e12", "1e12", "0", "4294967296", "32767"})
      add(std::string("every '") + f + "' = " + v, set_field(base, f, v, true));
  for (const char* v : {"16384", "16385", "65536", "0", "-1", "abc", "", "99999999999999", "4", "1e3"})
    add(std::string("world_size '") + v + "'", set_meta(base, "world_size", v));
  for (const char* v : {"32767", "32768", "0", "-4", "1000000000", "x", "16384"})
    add(std::string("chunks '") + v + "'", set_meta(base, "chunks", v));
  return cases;
}

// Shapes no mutation of a small file reaches: depth, size, counts, time order, flows.
inline std::vector<HostileCase> structural_cases(const std::string& base) {
  std::vector<HostileCase> cases;
  auto add = [&](std::string name, std::string bytes) { cases.push_back({std::move(name), std::move(bytes), false}); };
  const std::size_t args = base.find("\"args\":{\"bytes\"");
  for (int depth : {100, 1024, 1025, 100000, 600000}) {
    std::string s = base;
    s.insert(args + 8, "\"deep\":" + nested(depth) + ",");
    add("nesting " + std::to_string(depth) + " inside an event", s);
    add("nesting " + std::to_string(depth) + " outside traceEvents",
        "{\"deep\":" + nested(depth) + "," + base.substr(1));
  }
  add("nesting 200000 as the document", nested(200000));
  add("no flow ends", drop_lines(base, "{\"ph\":\"f\""));
  add("no recvs (sends without ends)", drop_lines(base, "{\"ph\":\"X\",\"cat\":\"recv\""));
  add("every timestamp equal", set_field(base, "ts", "5", true));
  add("every timestamp negative", replace_all(base, "\"ts\":", "\"ts\":-"));
  add("zero durations", set_field(base, "dur", "0", true));
  add("two traceEvents arrays", "{\"traceEvents\":[]," + base.substr(1));
  add("traceEvents is an object", "{\"traceEvents\":{\"ph\":\"X\"}}");
  add("enormous world, few events", set_meta(base, "world_size", "16384"));
  add("one event at rank 16383",
      "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"send\",\"pid\":16383,\"ts\":1,\"dur\":1,"
      "\"args\":{\"peer\":0,\"chunk\":32767,\"chunk_count\":32767,\"bytes\":1125899906842624}}]}");
  add("staggered spans 200000", staggered_spans(200000));
  std::string names = "{\"traceEvents\":[";
  for (int i = 0; i < 70000; ++i) {
    if (i) names += ',';
    names += "{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":0,\"ts\":1,\"dur\":1,\"name\":\"n" + std::to_string(i) + "\"}";
  }
  add("70000 distinct names", names + "]}");
  add("a 2 MiB name", "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"phase\",\"pid\":0,\"ts\":1,\"dur\":1,\"name\":\"" +
                          std::string(2 << 20, 'a') + "\"}]}");
  std::string meta_only = "{\"traceEvents\":[";
  for (int i = 0; i < 300000; ++i) {
    if (i) meta_only += ',';
    meta_only += "{\"ph\":\"M\",\"pid\":" + std::to_string(i % 16384) + "}";
  }
  add("300000 metadata events", meta_only + "]}");
  add("text after the end", base + "{}");
  add("empty object", "{}");
  add("utf-8 garbage", "{\"traceEvents\":[{\"ph\":\"\xc3\x28\"}]}");
  return cases;
}

// The .dtlt companion's layout, found by walking it (see core/trace/binary_trace.h).
inline constexpr std::size_t kDtltRoleBytes = 12;
struct DtltLayout {
  std::size_t labels = 32, meta = 0, event_count = 0, events = 0;
};

inline DtltLayout dtlt_layout(const std::string& b) {
  DtltLayout l;
  auto u64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    if (at + 8 <= b.size()) std::memcpy(&v, b.data() + at, 8);
    return v;
  };
  auto skip_strings = [&](std::size_t at, std::uint64_t n) {  // stays inside the file whatever it holds
    for (std::uint64_t i = 0; i < n && at < b.size(); ++i)
      at += 8 + std::size_t(std::min<std::uint64_t>(u64(at), b.size()));
    return std::min(at, b.size());
  };
  auto skip_labels = [&](std::size_t at, std::uint64_t n) {  // each: a string and its 12-byte Role
    for (std::uint64_t i = 0; i < n && at < b.size(); ++i)
      at += 8 + std::size_t(std::min<std::uint64_t>(u64(at), b.size())) + kDtltRoleBytes;
    return std::min(at, b.size());
  };
  l.meta = skip_labels(l.labels + 8, u64(l.labels));
  l.event_count = skip_strings(l.meta + 8, 2 * u64(l.meta));
  l.events = l.event_count + 8;
  return l;
}

inline std::vector<HostileCase> binary_cases(const std::string& base) {
  std::vector<HostileCase> cases;
  auto add = [&](std::string name, std::string bytes) { cases.push_back({std::move(name), std::move(bytes), true}); };
  auto poke = [&](std::string name, std::size_t at, const void* v, std::size_t n) {
    std::string s = base;
    if (at + n > s.size()) return;
    std::memcpy(s.data() + at, v, n);
    add(std::move(name), s);
  };
  for (int k = 0; k < 40; ++k)
    add("dtlt truncated at " + std::to_string(k) + "/40", base.substr(0, base.size() * std::size_t(k) / 40));
  std::mt19937_64 rng(1414);
  for (int k = 0; k < 100; ++k) {
    std::string s = base;
    const std::size_t at =
        k < 50 ? rng() % std::min<std::size_t>(s.size(), 4096) : rng() % s.size();  // half in the header
    s[at] = char(s[at] ^ (1 << (rng() % 8)));
    add("dtlt bit flip " + std::to_string(k) + " at byte " + std::to_string(at), s);
  }
  const DtltLayout l = dtlt_layout(base);
  for (std::uint32_t w : {0u, 16384u, 16385u, 1u << 31, ~0u}) poke("dtlt world size " + std::to_string(w), 12, &w, 4);
  for (std::uint64_t n : {std::uint64_t(1) << 20, std::uint64_t(1) << 60, ~std::uint64_t(0)}) {
    poke("dtlt label count " + std::to_string(n), l.labels, &n, 8);
    poke("dtlt first label length " + std::to_string(n), l.labels + 8, &n, 8);
    const std::uint8_t unknown = std::uint8_t(n >> 56 | 0x80);  // label 0 is "": its role follows its length
    poke("dtlt first label's role kind " + std::to_string(unknown), l.labels + 16, &unknown, 1);
    poke("dtlt meta count " + std::to_string(n), l.meta, &n, 8);
    poke("dtlt event count " + std::to_string(n), l.event_count, &n, 8);
  }
  struct Field {
    const char* name;
    std::size_t offset;
    std::int64_t value;
    std::size_t size;
  };
  const Field fields[] = {{"begin", 0, INT64_MIN, 8}, {"end", 8, -5, 8},        {"bytes", 16, INT64_MAX, 8},
                          {"rank", 32, -1, 4},        {"rank", 32, 1 << 20, 4}, {"peer", 36, -7, 4},
                          {"peer", 36, 99999, 4},     {"chunk", 48, -9, 4},     {"chunk_count", 52, -1, 2},
                          {"label", 56, 65535, 2},    {"kind", 58, 200, 1},     {"stream", 59, 9, 1}};
  for (const Field& f : fields)
    for (std::size_t event : {std::size_t(0), std::size_t(7)})
      poke("dtlt event " + std::to_string(event) + " " + f.name + " = " + std::to_string(f.value),
           l.events + 64 * event + f.offset, &f.value, f.size);
  return cases;
}

}  // namespace dtl::test
