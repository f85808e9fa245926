// The in-memory checkpoint and the writer; the reader and its checks are in
// safetensors_read.cpp.
#include "core/util/safetensors.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/util/files.h"

namespace dtl {

// The format is little-endian; dtlab copies bytes as they are in memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

std::string_view safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
  }
  return "?";
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

std::size_t element_count(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= std::size_t(d);
  return n;
}

}  // namespace

namespace safetensors_detail {

void check_value_type(DType have, DType want) {
  if (have != want)
    throw UsageError("checkpoint tensor is " + std::string(safetensors_dtype_name(have)) + ", read as " +
                     std::string(safetensors_dtype_name(want)));
}

void check_value_count(const std::string& name, const std::vector<std::int64_t>& shape, std::size_t count) {
  if (element_count(shape) != count)
    throw UsageError("checkpoint tensor '" + name + "' of shape " + shape_text(shape) + " needs " +
                     std::to_string(element_count(shape)) + " values, given " + std::to_string(count));
}

}  // namespace safetensors_detail

std::size_t CheckpointTensor::elements() const { return element_count(shape); }

void SafeTensors::add(const std::string& name, DType dtype, std::vector<std::int64_t> shape, const void* data) {
  if (name.empty() || name == "__metadata__") throw UsageError("a checkpoint tensor cannot be named '" + name + "'");
  for (std::int64_t d : shape)
    if (d < 0) throw UsageError("checkpoint tensor '" + name + "' has a negative dimension in " + shape_text(shape));
  CheckpointTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.resize(t.elements() * dtype_size(dtype));
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), data, t.bytes.size());
  tensors_[name] = std::move(t);
}

const CheckpointTensor& SafeTensors::at(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  std::string held;
  int shown = 0;
  for (const auto& [n, t] : tensors_) {
    if (shown++ == 8) {
      held += ", ...";
      break;
    }
    held += (held.empty() ? "" : ", ") + n;
  }
  throw UsageError(source_ + " has no tensor '" + name + "' (it has " + std::to_string(tensors_.size()) +
                   " tensors: " + held + "); was it written for another model?");
}

const CheckpointTensor& SafeTensors::require(const std::string& name, DType dtype,
                                             const std::vector<std::int64_t>& shape) const {
  const CheckpointTensor& t = at(name);
  if (t.dtype != dtype)
    throw UsageError(source_ + ": tensor '" + name + "' is " + std::string(safetensors_dtype_name(t.dtype)) +
                     ", the model expects " + std::string(safetensors_dtype_name(dtype)));
  if (t.shape != shape)
    throw UsageError(source_ + ": tensor '" + name + "' has shape " + shape_text(t.shape) + ", the model expects " +
                     shape_text(shape));
  return t;
}

std::vector<float> SafeTensors::require_floats(const std::string& name, const std::vector<std::int64_t>& shape) const {
  return require(name, DType::f32, shape).values<float>();
}

namespace {

// The reference writer's data order: larger elements first (so each tensor stays aligned
// to its element size), then by name.
std::vector<const std::pair<const std::string, CheckpointTensor>*> data_order(const SafeTensors& st) {
  std::vector<const std::pair<const std::string, CheckpointTensor>*> order;
  for (const auto& entry : st.tensors()) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return dtype_size(a->second.dtype) > dtype_size(b->second.dtype); });
  return order;
}

}  // namespace

std::string encode_safetensors(const SafeTensors& st) {
  nlohmann::json header = nlohmann::json::object();
  std::size_t offset = 0;
  const auto order = data_order(st);
  for (const auto* entry : order) {
    const CheckpointTensor& t = entry->second;
    header[entry->first] = {{"dtype", safetensors_dtype_name(t.dtype)},
                            {"shape", t.shape},
                            {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!st.metadata().empty()) header["__metadata__"] = st.metadata();
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  const std::uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  out += json;
  out.reserve(out.size() + offset);
  for (const auto* entry : order)
    out.append(reinterpret_cast<const char*>(entry->second.bytes.data()), entry->second.bytes.size());
  return out;
}

void write_safetensors(const std::string& path, const SafeTensors& tensors) {
  write_text_file(path, encode_safetensors(tensors), "the checkpoint");
}

}  // namespace dtl
