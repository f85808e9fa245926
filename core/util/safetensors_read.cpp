// Reading a safetensors file, checking everything before trusting any of it: a truncated
// download, a hand-edited header or a file from another tool should end in a sentence that
// names the file and the tensor, never in a crash or a silently wrong model.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/util/safetensors.h"

namespace dtl {

namespace {

// The reference implementation refuses headers over 100 MB; so does dtlab, so a corrupt
// length cannot ask for gigabytes.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct Placed {  // a tensor's byte range in the data section, for the overlap check
  std::string name;
  std::uint64_t begin = 0, end = 0;
};

[[noreturn]] void bad(const std::string& source, const std::string& why) {
  throw UsageError(source + " is not a valid safetensors file: " + why);
}

DType parse_format_dtype(const std::string& source, const std::string& name, const nlohmann::json& j) {
  static const std::pair<const char*, DType> known[] = {{"F32", DType::f32}, {"F64", DType::f64},
                                                        {"I32", DType::i32}, {"I64", DType::i64},
                                                        {"F16", DType::f16}, {"BF16", DType::bf16}};
  if (!j.is_string()) bad(source, "tensor '" + name + "' has no \"dtype\" string");
  for (const auto& [text, t] : known)
    if (j.get<std::string>() == text) return t;
  bad(source, "tensor '" + name + "' has dtype " + j.dump() +
                  ", which dtlab does not read (it reads F32, F64, I32, I64, F16 and BF16)");
}

// A JSON array of non-negative integers, each at most `limit`.
std::vector<std::uint64_t> parse_counts(const std::string& source, const std::string& name, const nlohmann::json& j,
                                        const char* key, std::uint64_t limit) {
  const std::string what =
      "tensor '" + name + "' has a malformed \"" + key + "\" " + (j.is_null() ? "(missing)" : j.dump());
  if (!j.is_array()) bad(source, what);
  std::vector<std::uint64_t> out;
  for (const auto& v : j) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > limit) bad(source, what);
    out.push_back(v.get<std::uint64_t>());
  }
  return out;
}

// Elements × element size, or nullopt-like max() when it overflows.
std::uint64_t byte_count(const std::vector<std::uint64_t>& shape, DType t) {
  std::uint64_t n = dtype_size(t);
  for (std::uint64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) return std::numeric_limits<std::uint64_t>::max();
    n *= d;
  }
  return n;
}

Placed add_entry(SafeTensors& st, const std::string& source, const std::string& name, const nlohmann::json& entry,
                 std::string_view data) {
  if (name.empty()) bad(source, "a tensor has an empty name");
  if (!entry.is_object()) bad(source, "the entry of tensor '" + name + "' is not an object");
  const DType dtype = parse_format_dtype(source, name, entry.value("dtype", nlohmann::json()));
  const auto shape = parse_counts(source, name, entry.value("shape", nlohmann::json()), "shape",
                                  std::uint64_t(std::numeric_limits<std::int64_t>::max()));
  const auto offsets = parse_counts(source, name, entry.value("data_offsets", nlohmann::json()), "data_offsets",
                                    std::numeric_limits<std::uint64_t>::max());
  if (offsets.size() != 2 || offsets[0] > offsets[1])
    bad(source, "tensor '" + name + "' has data_offsets " + entry["data_offsets"].dump() + "; want [begin, end]");
  if (offsets[1] > data.size())
    bad(source, "tensor '" + name + "' ends at data byte " + std::to_string(offsets[1]) + " but the data section has " +
                    std::to_string(data.size()) + " bytes (truncated file?)");
  const std::uint64_t want = byte_count(shape, dtype);
  if (offsets[1] - offsets[0] != want)
    bad(source, "tensor '" + name + "' is " + std::string(safetensors_dtype_name(dtype)) + " " +
                    shape_text(std::vector<std::int64_t>(shape.begin(), shape.end())) + " (" + std::to_string(want) +
                    " bytes) but its data_offsets span " + std::to_string(offsets[1] - offsets[0]) + " bytes");
  st.add(name, dtype, std::vector<std::int64_t>(shape.begin(), shape.end()), data.data() + offsets[0]);
  return {name, offsets[0], offsets[1]};
}

// The tensors must tile the data section exactly, as the reference reader demands: no
// overlap (two tensors sharing bytes), no gap, nothing after the last one.
void check_tiling(std::vector<Placed> placed, std::uint64_t data_bytes, const std::string& source) {
  std::sort(placed.begin(), placed.end(),
            [](const Placed& a, const Placed& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (placed[i].begin < covered)
      bad(source, "tensors '" + placed[i - 1].name + "' and '" + placed[i].name + "' overlap (data bytes " +
                      std::to_string(placed[i].begin) + " to " + std::to_string(covered) + ")");
    if (placed[i].begin > covered)
      bad(source, "data bytes " + std::to_string(covered) + " to " + std::to_string(placed[i].begin) +
                      " belong to no tensor (before '" + placed[i].name + "')");
    covered = placed[i].end;
  }
  if (covered != data_bytes)
    bad(source, "the data section has " + std::to_string(data_bytes) + " bytes but the tensors cover " +
                    std::to_string(covered));
}

void read_metadata(SafeTensors& st, const std::string& source, const nlohmann::json& j) {
  if (!j.is_object()) bad(source, "\"__metadata__\" is not an object of strings");
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) bad(source, "\"__metadata__\" entry '" + key + "' is not a string");
    st.metadata()[key] = value.get<std::string>();
  }
}

nlohmann::json parse_header(std::string_view file, const std::string& source, std::uint64_t& header_bytes) {
  if (file.size() < 8)
    bad(source, "it is " + std::to_string(file.size()) + " bytes, shorter than the 8-byte header length");
  std::memcpy(&header_bytes, file.data(), 8);
  if (header_bytes > kMaxHeaderBytes)
    bad(source, "its header length is " + std::to_string(header_bytes) + " bytes (more than 100 MB)");
  if (file.size() - 8 < header_bytes)
    bad(source, "its header is " + std::to_string(header_bytes) + " bytes but the file has only " +
                    std::to_string(file.size() - 8) + " after the length (truncated file?)");
  nlohmann::json header = nlohmann::json::parse(file.substr(8, header_bytes), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) bad(source, "its " + std::to_string(header_bytes) + "-byte header is not JSON");
  if (!header.is_object()) bad(source, "its header is JSON but not an object");
  return header;
}

}  // namespace

SafeTensors decode_safetensors(std::string_view file, const std::string& source) {
  std::uint64_t header_bytes = 0;
  const nlohmann::json header = parse_header(file, source, header_bytes);
  const std::string_view data = file.substr(8 + header_bytes);
  SafeTensors st(source);
  std::vector<Placed> placed;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__")
      read_metadata(st, source, entry);
    else
      placed.push_back(add_entry(st, source, name, entry, data));
  }
  check_tiling(std::move(placed), data.size(), source);
  return st;
}

SafeTensors read_safetensors(const std::string& path) {
  const std::string source = "checkpoint '" + path + "'";
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw UsageError("cannot open " + source + ": " + std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw UsageError("reading " + source + " failed: " + std::strerror(errno ? errno : EIO));
  return decode_safetensors(bytes, source);
}

}  // namespace dtl
