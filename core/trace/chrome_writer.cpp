#include "core/trace/chrome_writer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/trace/binary_trace.h"
#include "core/util/files.h"

namespace dtl {

bool is_span(EventKind k) {
  return k == EventKind::compute || k == EventKind::send || k == EventKind::recv || k == EventKind::collective ||
         k == EventKind::phase;
}

std::vector<int> assign_lanes(const std::vector<Event>& spans, int max_lanes) {
  std::vector<int> lane(spans.size(), 0);
  std::vector<std::vector<std::int64_t>> open_ends;  // per lane: stack of end times
  const std::size_t cap = std::size_t(std::max(1, max_lanes));
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Event& e = spans[i];
    std::size_t l = 0;
    for (; l < open_ends.size(); ++l) {
      auto& stack = open_ends[l];
      while (!stack.empty() && stack.back() <= e.begin_ns) stack.pop_back();
      if (stack.empty() || e.end_ns <= stack.back()) break;  // nests (or the lane is free)
    }
    if (l == open_ends.size() && l < cap) open_ends.emplace_back();
    if (l == open_ends.size()) {  // no lane left: share the last one, keeping its stack nested
      l = cap - 1;
      auto& stack = open_ends[l];
      while (!stack.empty() && stack.back() < e.end_ns) stack.pop_back();
    }
    open_ends[l].push_back(e.end_ns);
    lane[i] = int(l);
  }
  return lane;
}

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Microseconds with nanosecond precision, as Chrome's "ts" expects. Times before the
// epoch happen (under mpirun or srun, ranks record their buffers' allocs before the
// trace's epoch): -2818222 ns is "-2818.222", not "-2818.-222", which no parser reads.
std::string us(std::int64_t ns) {
  char buf[32];
  const unsigned long long a =
      ns < 0 ? 0ULL - static_cast<unsigned long long>(ns) : static_cast<unsigned long long>(ns);
  std::snprintf(buf, sizeof buf, "%s%llu.%03llu", ns < 0 ? "-" : "", a / 1000, a % 1000);
  return buf;
}

std::string span_name(const Event& e, const std::vector<std::string>& labels) {
  if (e.label != 0 && e.label < labels.size()) return labels[e.label];
  switch (e.kind) {
    case EventKind::send: return "send → " + std::to_string(e.peer);
    case EventKind::recv:
      return std::string(e.flags & kFlagReduce ? "recv_reduce ← " : "recv ← ") + std::to_string(e.peer);
    default: return event_kind_name(e.kind);
  }
}

// Builds the JSON of one trace, track by track.
class ChromeJson {
 public:
  explicit ChromeJson(const Trace& trace) : trace_(trace), labels_(trace.labels()) {
    for (const Role& r : trace.roles()) role_members_.push_back(role_json_members(r));  // once per label, not per span
  }

  std::string build(const std::string& error) {
    out_ = "{\"displayTimeUnit\":\"ns\",\"otherData\":{";
    bool first = true;
    for (const auto& [k, v] : trace_.meta()) {
      out_ += (first ? "\"" : ",\"") + escape(k) + "\":\"" + escape(v) + "\"";
      first = false;
    }
    out_ += std::string(first ? "" : ",") + "\"world_size\":\"" + std::to_string(trace_.world_size()) + "\"";
    if (!error.empty()) out_ += ",\"error\":\"" + escape(error) + "\"";
    out_ += "},\"traceEvents\":[\n";
    for (int r = 0; r < trace_.world_size(); ++r) rank(r);
    out_ += "\n]}\n";
    return std::move(out_);
  }

 private:
  void emit(const std::string& obj) {
    if (!first_event_) out_ += ",\n";
    out_ += obj;
    first_event_ = false;
  }

  // A rank's process, its memory counters and instants, then each stream's spans in lanes.
  void rank(int r) {
    const std::string pid = std::to_string(r);
    emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"args\":{\"name\":\"rank " + pid + "\"}}");
    emit("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" + pid + "}}");
    MemoryByTag mem;
    for (int s = 0; s < Trace::kStreams; ++s) {
      const EventLog& log = trace_.log(r, s);
      std::vector<Event> spans;
      for (std::size_t i = 0; i < log.size(); ++i) {
        const Event& e = log[i];
        if (is_span(e.kind)) {
          spans.push_back(e);
        } else if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
          mem.apply(e);
          std::string args;
          for (int t = 0; t < kNumMemTags; ++t)
            args += std::string(t ? "," : "") + "\"" + mem_tag_name(MemTag(t)) + "\":" + std::to_string(mem.bytes[t]);
          emit("{\"ph\":\"C\",\"name\":\"memory (bytes)\",\"pid\":" + pid + ",\"ts\":" + us(e.begin_ns) +
               ",\"args\":{" + args + "}}");
        } else if (e.kind == EventKind::mark) {
          // An instant keeps its label's role too (a run's start: what the views segment by).
          emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\"" + escape(span_name(e, labels_)) + "\",\"pid\":" + pid +
               ",\"tid\":" + std::to_string(s * 1000) + ",\"ts\":" + us(e.begin_ns) + ",\"args\":{" + span_args(e) +
               "}}");
        }
      }
      stream_spans(pid, s, std::move(spans));
    }
  }

  // A stream's spans, nested into lanes (Chrome's tids s·1000 + lane), with flow arrows.
  void stream_spans(const std::string& pid, int s, std::vector<Event> spans) {
    std::stable_sort(spans.begin(), spans.end(), [](const Event& a, const Event& b) {
      return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.end_ns > b.end_ns;
    });
    const std::vector<int> lanes = assign_lanes(spans);
    const int n_lanes = lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end()) + 1;
    for (int l = 0; l < n_lanes; ++l) {
      std::string name = s == kStreamMain ? "main" : "comm stream";
      if (l > 0) name += " #" + std::to_string(l + 1);
      emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + std::to_string(s * 1000 + l) +
           ",\"args\":{\"name\":\"" + name + "\"}}");
    }
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Event& e = spans[i];
      const std::string tid = std::to_string(s * 1000 + lanes[i]);
      emit("{\"ph\":\"X\",\"cat\":\"" + std::string(event_kind_name(e.kind)) + "\",\"name\":\"" +
           escape(span_name(e, labels_)) + "\",\"pid\":" + pid + ",\"tid\":" + tid + ",\"ts\":" + us(e.begin_ns) +
           ",\"dur\":" + us(std::max<std::int64_t>(0, e.end_ns - e.begin_ns)) + ",\"args\":{" + span_args(e) + "}}");
      // Flow arrows: start inside the send span, finish inside the receive span.
      if (e.flow_id && (e.kind == EventKind::send || e.kind == EventKind::recv)) {
        const bool start = e.kind == EventKind::send;
        const std::int64_t at = start ? e.begin_ns : std::max(e.begin_ns, e.end_ns - 1);
        emit(std::string("{\"ph\":\"") + (start ? "s" : "f") +
             "\",\"cat\":\"transfer\",\"name\":\"transfer\",\"id\":" + std::to_string(e.flow_id) + ",\"pid\":" + pid +
             ",\"tid\":" + tid + ",\"ts\":" + us(at) + (start ? "" : ",\"bp\":\"e\"") + "}");
      }
    }
  }

  std::string span_args(const Event& e) const {
    std::string args = "\"bytes\":" + std::to_string(e.bytes);
    if (e.peer >= 0) args += ",\"peer\":" + std::to_string(e.peer) + ",\"tag\":" + std::to_string(e.tag);
    if (e.step >= 0) args += ",\"step\":" + std::to_string(e.step);
    if (e.chunk >= 0)
      args += ",\"chunk\":" + std::to_string(e.chunk) + ",\"chunk_count\":" + std::to_string(e.chunk_count);
    if (e.micro_batch >= 0) args += ",\"micro_batch\":" + std::to_string(e.micro_batch);
    if (e.flags & kFlagReduce) args += ",\"reduce\":1";
    if (e.flow_id) args += ",\"flow\":" + std::to_string(e.flow_id);
    if (e.axis != GroupAxis::none) args += ",\"axis\":\"" + std::string(group_axis_name(e.axis)) + "\"";
    if (e.group_rank >= 0) args += ",\"group_rank\":" + std::to_string(e.group_rank);
    if (e.label < role_members_.size()) args += role_members_[e.label];  // the label's typed role (vocab.h)
    return args;
  }

  const Trace& trace_;
  const std::vector<std::string> labels_;
  std::vector<std::string> role_members_;  // per label: its role as "args" members
  std::string out_;
  bool first_event_ = true;
};

}  // namespace

std::string chrome_trace_json(const Trace& trace, const std::string& error) { return ChromeJson(trace).build(error); }

void write_chrome_trace(const Trace& trace, const std::string& path, const std::string& error) {
  const std::string json = chrome_trace_json(trace, error);
  write_text_file(path, json, "the trace");  // checks every write and the close (a full disk)
  // The visualizer's fast companion, stamped with the JSON it describes, beside a file
  // (a trace sent to /dev/stdout or a pipe has no "beside": no /dev/stdout.dtlt).
  const bool special = path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;  // /dev/stdout → a file too
  if (!special && is_regular_file(path)) write_binary_trace(trace, path + ".dtlt", stamp_of(json), error);
}

}  // namespace dtl
