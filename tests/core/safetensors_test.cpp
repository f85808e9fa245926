// safetensors checkpoints: round trip, the exact bytes of a small file, a clear error for
// every kind of malformed file, and a cross-check with PyTorch (tests/python/) when a
// python3 with torch is installed.
#include "core/util/safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/util/files.h"
#include "tests/python_torch.h"

using namespace dtl;

namespace {

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "dtl_safetensors_" + name; }

// A file from a header text and `data_bytes` bytes of data (0, 1, 2, ...).
std::string craft(const std::string& header, std::size_t data_bytes) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out += header;
  for (std::size_t i = 0; i < data_bytes; ++i) out += char(i);
  return out;
}

// Reading `bytes` from a file throws UsageError whose message has every one of `parts`.
void expect_read_error(const std::string& case_name, const std::string& bytes, const std::vector<std::string>& parts) {
  const std::string path = temp_path(case_name + ".safetensors");
  write_text_file(path, bytes, "the test file");
  try {
    read_safetensors(path);
    ADD_FAILURE() << case_name << ": read without an error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + path + "'"), std::string::npos) << case_name << ": " << what;
    for (const auto& part : parts) EXPECT_NE(what.find(part), std::string::npos) << case_name << ": " << what;
  }
}

SafeTensors sample() {
  SafeTensors st;
  st.add<float>("w", {2, 3}, {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f});
  st.add<std::int32_t>("ids", {4}, {-2, 0, 7, 2147483647});
  const std::uint16_t half[3] = {float_to_bf16(1.0f), float_to_bf16(-2.5f), float_to_bf16(3.140625f)};
  st.add("half", DType::bf16, {3}, half);
  st.add<double>("d", {2}, {1.0 / 3.0, -1e300});
  st.add<float>("empty", {0, 4}, {});
  st.metadata() = {{"format", "pt"}, {"step", "7"}};
  return st;
}

}  // namespace

TEST(SafeTensors, RoundTripKeepsEveryTensorAndTheMetadata) {
  const SafeTensors st = sample();
  const std::string path = temp_path("round_trip.safetensors");
  write_safetensors(path, st);
  const SafeTensors back = read_safetensors(path);
  ASSERT_EQ(back.tensors().size(), st.tensors().size());
  for (const auto& [name, t] : st.tensors()) {
    const CheckpointTensor& b = back.at(name);
    EXPECT_EQ(b.dtype, t.dtype) << name;
    EXPECT_EQ(b.shape, t.shape) << name;
    EXPECT_EQ(b.bytes, t.bytes) << name;
  }
  EXPECT_EQ(back.metadata(), st.metadata());
  EXPECT_EQ(back.require_floats("w", {2, 3}), (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}));
  EXPECT_EQ(back.at("ids").values<std::int32_t>()[3], 2147483647);
}

TEST(SafeTensors, WritesTheExactLayout) {
  SafeTensors st;
  st.add<float>("b", {2}, {1.0f, 2.0f});
  const std::uint16_t one_f16 = 0x3C00;
  st.add("a", DType::f16, {1}, &one_f16);
  st.add<std::int64_t>("c", {1}, {7});
  st.metadata()["k"] = "v";
  const std::string file = encode_safetensors(st);
  // Keys in name order ("__metadata__" sorts first); data by element size, then name: c, b, a.
  const std::string json =
      R"({"__metadata__":{"k":"v"},"a":{"data_offsets":[16,18],"dtype":"F16","shape":[1]},)"
      R"("b":{"data_offsets":[8,16],"dtype":"F32","shape":[2]},"c":{"data_offsets":[0,8],"dtype":"I64","shape":[1]}})";
  const std::size_t n = (json.size() + 7) / 8 * 8;
  ASSERT_EQ(file.size(), 8 + n + 18);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(std::uint8_t(file[i]), std::uint8_t((n >> (8 * i)) & 0xFF)) << "length byte " << i;
  EXPECT_EQ(file.substr(8, json.size()), json);
  EXPECT_EQ(file.substr(8 + json.size(), n - json.size()), std::string(n - json.size(), ' '));
  EXPECT_EQ((8 + n) % 8, 0u);
  const std::string data = file.substr(8 + n);
  const std::string want_data =
      std::string("\x07\0\0\0\0\0\0\0", 8) + std::string("\0\0\x80\x3f\0\0\0\x40", 8) + std::string("\0\x3c", 2);
  EXPECT_EQ(data, want_data);
}

TEST(SafeTensors, EveryMalformedFileGivesAClearError) {
  const std::string ok = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_read_error("short", "abc", {"shorter than the 8-byte header length"});
  expect_read_error("truncated_header", craft(ok, 8).substr(0, 20), {"truncated"});
  expect_read_error("truncated_data", craft(ok, 7), {"'t'", "truncated"});
  expect_read_error("not_json", craft("{\"t\": [1, 2", 0), {"not JSON"});
  expect_read_error("not_object", craft("[1, 2]", 0), {"not an object"});
  expect_read_error("unknown_dtype", craft(R"({"t":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}})", 1),
                    {"'t'", "\"Q4\"", "does not read"});
  expect_read_error("out_of_range", craft(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 8),
                    {"'t'", "ends at data byte 16"});
  expect_read_error("wrong_size", craft(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                    {"'t'", "F32 [3] (12 bytes)", "span 8 bytes"});
  expect_read_error("overlap",
                    craft(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("u":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          8),
                    {"'t' and 'u' overlap"});
  expect_read_error("gap", craft(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                    {"data bytes 0 to 4 belong to no tensor", "'t'"});
  expect_read_error("bad_offsets", craft(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
                    {"'t'", "data_offsets"});
  expect_read_error("negative_shape", craft(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                    {"'t'", "\"shape\""});
  expect_read_error("bad_metadata", craft(R"({"__metadata__":{"step":7}})", 0), {"'step' is not a string"});
  expect_read_error("empty_name", craft(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4), {"empty name"});
  expect_read_error("empty_file", "", {"it is 0 bytes"});
  EXPECT_THROW(read_safetensors(temp_path("no_such_file")), UsageError);
}

TEST(SafeTensors, RequireNamesTheTensorAndBothShapes) {
  SafeTensors st("checkpoint 'gpt.safetensors'");
  st.add<float>("h.0.attn.c_attn.weight", {24, 8}, std::vector<float>(24 * 8));
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const UsageError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  EXPECT_EQ(
      message([&] {
        st.require("h.0.attn.c_attn.weight", DType::f32, {48, 16});
      }),
      "checkpoint 'gpt.safetensors': tensor 'h.0.attn.c_attn.weight' has shape [24, 8], the model expects [48, 16]");
  EXPECT_EQ(message([&] {
              st.require("h.0.attn.c_attn.weight", DType::bf16, {24, 8});
            }),
            "checkpoint 'gpt.safetensors': tensor 'h.0.attn.c_attn.weight' is F32, the model expects BF16");
  EXPECT_NE(message([&] { st.require("wte", DType::f32, {256, 8}); }).find("has no tensor 'wte'"), std::string::npos);
  EXPECT_NO_THROW(st.require("h.0.attn.c_attn.weight", DType::f32, {24, 8}));
  EXPECT_THROW(st.add<float>("x", {2, 2}, {1.0f}), UsageError);  // 4 elements, 1 value
}

TEST(SafeTensorsPython, DtlabFileReadsInTorchAndBack) {
  const std::string python = test::python_with_torch();
  if (python.empty()) GTEST_SKIP() << test::kNoTorchReason;
  const std::string from_dtlab = temp_path("from_dtlab.safetensors"), for_dtlab = temp_path("for_dtlab.safetensors");
  write_safetensors(from_dtlab, sample());
  std::remove(for_dtlab.c_str());
  const std::string cmd =
      python + " " DTL_SOURCE_DIR "/tests/python/safetensors_cross_check.py " + from_dtlab + " " + for_dtlab;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const SafeTensors back = read_safetensors(for_dtlab);
  EXPECT_EQ(back.require_floats("x", {3, 2}), (std::vector<float>{-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f}));
  const auto y = back.require("y", DType::bf16, {2, 2}).values<std::uint16_t>();
  EXPECT_EQ(bf16_to_float(y[1]), -0.5f);
  EXPECT_EQ(bf16_to_float(y[3]), 1000.0f);
  EXPECT_EQ(back.require("z", DType::i64, {3}).values<std::int64_t>(), (std::vector<std::int64_t>{1, -1, 1LL << 40}));
  const auto e = back.require("e", DType::f16, {2}).values<std::uint16_t>();
  EXPECT_EQ(f16_to_float(e[0]), 0.5f);
  EXPECT_EQ(f16_to_float(e[1]), -65504.0f);
  EXPECT_EQ(back.metadata().at("written_by").rfind("torch ", 0), 0u);
}
