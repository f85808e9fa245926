// Checkpoints in the safetensors format, so a model trained in dtlab opens in PyTorch (and
// the other way round) with nothing but a JSON parser:
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header, padded with spaces][data bytes]
//
//   header = {"wte": {"dtype": "F32", "shape": [256, 64], "data_offsets": [0, 65536]},
//             ..., "__metadata__": {"step": "100"}}
//
// data_offsets count from the first data byte; N is a multiple of 8, so the data starts
// 8-byte aligned. What dtlab writes (docs/checkpoints.md):
//   - the JSON keys in name order (nlohmann::json keeps objects sorted);
//   - the data ordered as the format's reference writer orders it: by element size,
//     largest first, then by name; so with an aligned start every tensor is aligned to its
//     element size, and the tensors tile the data with no gaps;
//   - "__metadata__" only when there is some.
// Reading checks everything a truncated or hand-edited file can get wrong and throws
// dtl::UsageError naming the file and the tensor; require() turns "the checkpoint does not
// fit the model" into one sentence naming the tensor and both shapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/comm/dtype.h"

namespace dtl {

// "F32", "F64", "I32", "I64", "F16", "BF16": the format's names for dtlab's DTypes.
std::string_view safetensors_dtype_name(DType t);

// "[48, 16]": how shapes appear in messages.
std::string shape_text(const std::vector<std::int64_t>& shape);

struct CheckpointTensor {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;  // little-endian, row-major, elements() * dtype_size(dtype)

  std::size_t elements() const;
  // The values as T (T must be dtype's C++ type: float for F32, ..., std::uint16_t for the
  // bits of F16 and BF16); UsageError otherwise.
  template <typename T>
  std::vector<T> values() const;
};

// Named tensors plus string metadata: one checkpoint, in memory.
class SafeTensors {
 public:
  SafeTensors() = default;
  // `source` names the file in error messages ("checkpoint 'run/ckpt.safetensors'").
  explicit SafeTensors(std::string source) : source_(std::move(source)) {}

  // Adds (or replaces) `name`, copying elements(shape) * dtype_size(dtype) bytes of `data`.
  void add(const std::string& name, DType dtype, std::vector<std::int64_t> shape, const void* data);
  template <typename T>
  void add(const std::string& name, std::vector<std::int64_t> shape, const std::vector<T>& values);

  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor; UsageError naming the file, the tensor and what the file does hold.
  const CheckpointTensor& at(const std::string& name) const;
  // at(name), after checking its dtype and shape against what the model expects:
  //   "checkpoint 'c.safetensors': tensor 'h.0.attn.c_attn.weight' has shape [24, 8],
  //    the model expects [48, 16]"
  const CheckpointTensor& require(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape) const;
  // require() for float tensors, returning the values.
  std::vector<float> require_floats(const std::string& name, const std::vector<std::int64_t>& shape) const;

  const std::map<std::string, CheckpointTensor>& tensors() const { return tensors_; }
  std::map<std::string, std::string>& metadata() { return metadata_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_ = "checkpoint";
  std::map<std::string, CheckpointTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (and their metadata) to `path`; dtl::Error names the path when the
// write fails (core/util/files.h).
void write_safetensors(const std::string& path, const SafeTensors& tensors);
// The file's bytes, as write_safetensors writes them (tests compare against it).
std::string encode_safetensors(const SafeTensors& tensors);

// Reads and checks `path`: UsageError naming the file (and the tensor) when it is shorter
// than its header says, the header is not JSON or not an object, a dtype is unknown, a
// shape or data_offsets entry is malformed, a tensor's byte count is not elements × size,
// or the offsets leave the data section, overlap or leave gaps.
SafeTensors read_safetensors(const std::string& path);
// The same checks on bytes already in memory; `source` names them in messages.
SafeTensors decode_safetensors(std::string_view file_bytes, const std::string& source);

// ---- templates ---------------------------------------------------------------------------

namespace safetensors_detail {
// UsageError unless `have` == `want` (values<T>() of the wrong T).
void check_value_type(DType have, DType want);
// UsageError unless `count` == the product of `shape` (add() of a vector that does not fit).
void check_value_count(const std::string& name, const std::vector<std::int64_t>& shape, std::size_t count);
}  // namespace safetensors_detail

template <typename T>
std::vector<T> CheckpointTensor::values() const {
  if constexpr (std::is_same_v<T, std::uint16_t>)  // the raw bits of F16 and BF16
    safetensors_detail::check_value_type(dtype, dtype == DType::bf16 ? DType::bf16 : DType::f16);
  else
    safetensors_detail::check_value_type(dtype, dtype_of<T>());
  std::vector<T> out(elements());
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

template <typename T>
void SafeTensors::add(const std::string& name, std::vector<std::int64_t> shape, const std::vector<T>& values) {
  safetensors_detail::check_value_count(name, shape, values.size());
  add(name, dtype_of<T>(), std::move(shape), values.data());
}

}  // namespace dtl
