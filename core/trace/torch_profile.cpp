#include "core/trace/torch_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/trace/trace_limits.h"
#include "core/util/files.h"

namespace dtl {

// (Named, not anonymous: dtl_core is built in unity batches, where binary_trace.cpp has a Reader too.)
namespace torch_profile_impl {

namespace lim = trace_limits;
using nlohmann::json;

// A whole trace is parsed at once (nlohmann's DOM takes about ten times the file): the
// traces of a few profiled steps are megabytes.
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t(256) << 20;

[[noreturn]] void bad(std::size_t index, const std::string& why) {
  throw Error("torch profiler trace, event " + std::to_string(index) + ": " + why);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_communication(std::string_view n) {
  if (starts_with(n, "aten::")) return false;  // aten::broadcast_tensors (in mse_loss) is a tensor op
  for (std::string_view prefix : {"gloo:", "nccl", "c10d::", "ProcessGroup", "record_param_comms"})
    if (starts_with(n, prefix)) return true;
  for (std::string_view word : {"all_reduce", "allreduce", "AllReduce", "all_gather", "allgather", "AllGather",
                                "reduce_scatter", "ReduceScatter", "broadcast", "Broadcast", "barrier"})
    if (n.find(word) != std::string_view::npos) return true;
  return false;
}

std::int64_t micros_to_ns(const json& v, std::size_t index, const char* key) {
  if (!v.is_number()) bad(index, std::string("'") + key + "' is not a number");
  const double us = v.get<double>();
  if (!std::isfinite(us) || std::fabs(us) > lim::kMaxMicroseconds)
    bad(index, std::string("'") + key + "' is out of range");
  return std::int64_t(std::llround(us * 1000.0));
}

// A pid or tid as text: torch writes numbers and strings ("CPU functions").
std::string id_text(const json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

bool is_device_category(std::string_view c) {
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "gpu_user_annotation";
}

struct Reader {
  TorchProfile p;
  std::map<std::string, std::uint32_t, std::less<>> name_ids;
  std::map<std::string, int> thread_ids;

  std::uint32_t name_id(std::string_view n) {
    auto it = name_ids.find(n);
    if (it != name_ids.end()) return it->second;
    if (p.names.size() >= lim::kMaxLabels) throw Error("torch profiler trace: more distinct names than the limit");
    p.names.emplace_back(n);
    return name_ids.emplace(std::string(n), std::uint32_t(p.names.size() - 1)).first->second;
  }

  void span(const json& e, std::size_t index) {
    if (!e.is_object()) bad(index, "is not an object");
    const auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get<std::string_view>() != "X") return;
    if (!e.contains("ts") || !e.contains("dur")) bad(index, "a span without \"ts\" or \"dur\"");
    if (p.spans.size() >= lim::kMaxEvents) bad(index, "more spans than the limit");
    ProfileSpan s;
    s.begin_ns = micros_to_ns(e["ts"], index, "ts");
    const std::int64_t d = micros_to_ns(e["dur"], index, "dur");
    if (d < 0) bad(index, "'dur' is negative");
    s.end_ns = s.begin_ns + d;
    const std::string thread = id_text(e, "pid") + "/" + id_text(e, "tid");
    s.thread = thread_ids.emplace(thread, int(thread_ids.size())).first->second;
    const auto n = e.find("name");
    const std::string_view name = n != e.end() && n->is_string() ? n->get<std::string_view>() : "";
    const auto c = e.find("cat");
    const std::string_view cat = c != e.end() && c->is_string() ? c->get<std::string_view>() : "";
    s.device = is_device_category(cat);
    s.role = profile_role(cat, name);
    s.name = name_id(name.substr(0, 256));
    p.spans.push_back(s);
  }
};

void read_distributed_info(const json& doc, TorchProfile& p) {
  const auto info = doc.find("distributedInfo");
  if (info == doc.end() || !info->is_object()) return;
  const auto rank = info->find("rank"), world = info->find("world_size");
  if (rank != info->end() && rank->is_number_integer())
    p.rank = int(std::clamp<std::int64_t>(*rank, -1, lim::kMaxRanks));
  if (world != info->end() && world->is_number_integer())
    p.world = int(std::clamp<std::int64_t>(*world, 0, lim::kMaxRanks));
  if (p.rank >= lim::kMaxRanks || (p.world > 0 && p.rank >= p.world))
    throw Error("torch profiler trace: distributedInfo's rank " + std::to_string(p.rank) +
                " is not below its world_size " + std::to_string(p.world));
}

}  // namespace torch_profile_impl

namespace tp = torch_profile_impl;

ProfileRole profile_role(std::string_view category, std::string_view name) {
  if (tp::is_communication(name)) return ProfileRole::communication;
  if (tp::starts_with(name, "ProfilerStep#")) return ProfileRole::container;
  if (!category.empty())  // Kineto says what a span is
    return category == "user_annotation" || category == "gpu_user_annotation" || category == "python_function" ||
                   category == "Trace"
               ? ProfileRole::container
               : ProfileRole::operation;
  return name.find("::") != std::string_view::npos ? ProfileRole::operation : ProfileRole::container;
}

bool looks_like_torch_profile(std::string_view head) {
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '[') return true;  // the legacy layout
  return head.find("\"schemaVersion\"") != std::string_view::npos ||
         head.find("\"distributedInfo\"") != std::string_view::npos;
}

TorchProfile parse_torch_profile(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) throw Error("the torch profiler trace is not valid JSON");
  tp::Reader r;
  const nlohmann::json* events = &doc;
  if (doc.is_object()) {
    const auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array()) throw Error("the torch profiler trace has no \"traceEvents\" array");
    events = &*it;
    tp::read_distributed_info(doc, r.p);
  } else if (!doc.is_array()) {
    throw Error("the torch profiler trace is neither an array of events nor an object with \"traceEvents\"");
  } else {
    r.p.legacy = true;
  }
  std::size_t index = 0;
  for (const nlohmann::json& e : *events) r.span(e, index++);
  r.p.threads = int(r.thread_ids.size());
  std::stable_sort(r.p.spans.begin(), r.p.spans.end(), [](const ProfileSpan& a, const ProfileSpan& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.end_ns > b.end_ns;
  });
  return std::move(r.p);
}

TorchProfile load_torch_profile(const std::string& path) {
  // A regular file of bounded size: a pipe or a device (/dev/zero) would never end.
  require_readable_file(path, "the torch.profiler trace", tp::kMaxFileBytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("cannot open '" + path + "'; check the path (one torch.profiler trace per rank)");
  std::ostringstream text;
  text << f.rdbuf();
  const std::string s = text.str();
  if (!looks_like_torch_profile(s.substr(0, 4096)))
    throw UsageError("'" + path +
                     "' is not a torch.profiler trace (no event array, schemaVersion or distributedInfo); "
                     "write one per rank with torch.profiler's export_chrome_trace, or open dtlab's own "
                     "traces with dtlab-viz");
  try {
    TorchProfile p = parse_torch_profile(s);
    p.source = path;
    return p;
  } catch (const Error& e) { throw UsageError("'" + path + "': " + e.what()); }
}

namespace torch_profile_impl {

std::string file_head(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string head(4096, '\0');
  f.read(head.data(), std::streamsize(head.size()));
  head.resize(std::size_t(std::max<std::streamsize>(0, f.gcount())));
  return head;
}

// The first number in a file's name (rank12.json → 12), or -1.
long number_in_name(const std::string& name) {
  const std::size_t at = name.find_first_of("0123456789");
  if (at == std::string::npos) return -1;
  return std::strtol(name.c_str() + at, nullptr, 10);
}

std::vector<std::string> traces_in_folder(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".json" &&
        looks_like_torch_profile(file_head(entry.path())))
      found.push_back(entry.path());
  if (found.empty())
    throw UsageError("the folder '" + folder.string() +
                     "' holds no torch.profiler trace (*.json); write one per rank with export_chrome_trace");
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    const long na = number_in_name(a.filename().string()), nb = number_in_name(b.filename().string());
    return na != nb ? na < nb : a.filename() < b.filename();
  });
  std::vector<std::string> out;
  for (const auto& p : found) out.push_back(p.string());
  return out;
}

}  // namespace torch_profile_impl

std::vector<std::string> torch_trace_files(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      for (std::string& f : tp::traces_in_folder(a)) files.push_back(std::move(f));
    } else if (std::filesystem::exists(a, ec)) {
      files.push_back(a);
    } else {
      throw UsageError("'" + a + "' does not exist; pass each rank's torch.profiler trace or their folder");
    }
  }
  return files;
}

std::vector<TorchProfile> load_torch_run(const std::vector<std::string>& args) {
  std::vector<TorchProfile> out;
  for (const std::string& f : torch_trace_files(args)) out.push_back(load_torch_profile(f));
  return out;
}

}  // namespace dtl
