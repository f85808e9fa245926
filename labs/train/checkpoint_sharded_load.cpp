// Loading a sharded checkpoint (labs/train/checkpoint_sharded.h): find it, check its manifest
// and its pieces' checksums, and read the byte ranges a rank needs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/util/safetensors.h"
#include "labs/train/checkpoint_sharded.h"

namespace dtl {

namespace fs = std::filesystem;

std::size_t TensorEntry::elements() const {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= std::size_t(d);
  return n;
}

namespace {

constexpr const char* kManifest = "model.safetensors.index.json";

// What the folder of an unfinished save holds and lacks, from its rank files' "-of-N" names.
std::string unfinished_words(const fs::path& dir) {
  std::vector<std::string> files;
  int world = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    int r = 0, n = 0;
    if (std::sscanf(name.c_str(), "rank-%d-of-%d.safetensors", &r, &n) == 2) files.push_back(name), world = n;
  }
  std::string words = "it has no manifest (" + std::string(kManifest) + "): its save did not finish";
  if (world == 0) return words + "; no rank wrote its file";
  std::string missing;
  for (int r = 0; r < world; ++r) {
    char name[64];
    std::snprintf(name, sizeof name, "rank-%05d-of-%05d.safetensors", r, world);
    if (std::find(files.begin(), files.end(), name) == files.end()) missing += std::string(" ") + name;
  }
  return words + "; " + std::to_string(files.size()) + " of " + std::to_string(world) + " rank files" +
         (missing.empty() ? "" : ", missing:" + missing);
}

DType dtype_from(const std::string& source, const std::string& text) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::f16, DType::bf16})
    if (safetensors_dtype_name(t) == text) return t;
  throw UsageError(source + ": unknown dtype \"" + text + "\"");
}

// Each tensor's pieces, sorted, must cover [0, elements) once.
void check_tiling(const Manifest& m, const std::string& source) {
  for (const auto& [name, t] : m.tensors) {
    std::vector<const PieceEntry*> ps;
    for (const PieceEntry& p : m.pieces)
      if (p.tensor == name) ps.push_back(&p);
    std::sort(ps.begin(), ps.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    std::size_t next = 0;
    for (const PieceEntry* p : ps) {
      if (p->begin != next)
        throw UsageError(source + ": tensor '" + name + "' has " + (p->begin > next ? "a gap" : "an overlap") +
                         " at element " + std::to_string(next) + " (piece '" + p->name + "' starts at " +
                         std::to_string(p->begin) + ")");
      next = p->end;
    }
    if (next != t.elements())
      throw UsageError(source + ": tensor '" + name + "' has pieces up to element " + std::to_string(next) + " of " +
                       std::to_string(t.elements()) + " (a piece is missing)");
  }
}

// A piece file's data offsets of `name` and where its data section starts; "" or the problem.
std::string locate(const fs::path& file, const std::string& name, std::uint64_t& data_start, std::uint64_t& begin,
                   std::uint64_t& end) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "the file " + file.string() + " is missing or unreadable";
  std::uint64_t n = 0;
  if (!in.read(reinterpret_cast<char*>(&n), 8) || n > 100'000'000) return file.string() + " has no valid header";
  std::string header(n, ' ');
  if (!in.read(header.data(), std::streamsize(n))) return file.string() + " is shorter than its header says";
  const nlohmann::json j = nlohmann::json::parse(header, nullptr, false);
  if (!j.is_object() || !j.contains(name)) return file.string() + " does not hold it";
  const nlohmann::json off = j[name].is_object() ? j[name].value("data_offsets", nlohmann::json()) : nlohmann::json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned() ||
      off[1].get<std::uint64_t>() < off[0].get<std::uint64_t>())
    return file.string() + " has no valid data_offsets for it";
  data_start = 8 + n, begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
  return {};
}

// Bytes [lo, hi) of a piece's data (element offsets within the piece times the size); "" or the problem.
std::string read_piece(const Manifest& m, const PieceEntry& p, std::size_t lo, std::size_t hi, void* out) {
  const fs::path file = fs::path(m.dir) / p.file;
  std::uint64_t start = 0, begin = 0, end = 0;
  if (std::string why = locate(file, p.name, start, begin, end); !why.empty()) return why;
  const std::size_t size = dtype_size(m.tensors.at(p.tensor).dtype);
  if (end - begin != (p.end - p.begin) * size) return file.string() + " holds a piece of another size";
  std::ifstream in(file, std::ios::binary);
  in.seekg(std::streamoff(start + begin + lo * size));
  if (!in.read(static_cast<char*>(out), std::streamsize((hi - lo) * size))) return file.string() + " is truncated";
  return {};
}

// "" when the piece reads back whole with its checksum, else the problem.
std::string check_piece(const Manifest& m, const PieceEntry& p) {
  std::vector<char> bytes((p.end - p.begin) * dtype_size(m.tensors.at(p.tensor).dtype));
  if (std::string why = read_piece(m, p, 0, p.end - p.begin, bytes.data()); !why.empty()) return why;
  const std::uint64_t sum = fnv1a64(bytes.data(), bytes.size());
  if (sum == p.checksum) return {};
  char text[160];
  std::snprintf(text, sizeof text, "its FNV-1a checksum is %016llx, the manifest says %016llx (the file changed)",
                static_cast<unsigned long long>(sum), static_cast<unsigned long long>(p.checksum));
  return text;
}

[[noreturn]] void refuse_piece(const Manifest& m, const PieceEntry& p, const std::string& why) {
  throw UsageError("checkpoint " + m.dir + " refused: piece '" + p.name + "' (rank " + std::to_string(p.rank) + ", " +
                   p.file + "): " + why);
}

}  // namespace

std::string resolve_checkpoint(const std::string& path, std::vector<std::string>* skipped) {
  const fs::path dir(path);
  if (!fs::is_directory(dir)) throw UsageError("--resume " + path + ": no such checkpoint folder");
  if (fs::exists(dir / kManifest)) return path;
  std::vector<fs::path> steps;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("step-", 0) == 0) steps.push_back(e.path());
  if (steps.empty()) throw UsageError("--resume " + path + ": " + unfinished_words(dir));
  std::sort(steps.rbegin(), steps.rend());  // step-000010 after step-000009: newest first
  for (const fs::path& s : steps) {
    // Only step-NNNNNN: a .partial save never finished, a .old is an older copy of a step saved again.
    const bool whole = s.filename().string().size() == std::string("step-000000").size();
    if (whole && fs::exists(s / kManifest)) return s.string();
    if (skipped)
      skipped->push_back(s.filename().string() + ": " +
                         (fs::exists(s / kManifest) ? "an older copy of a step saved again" : unfinished_words(s)));
  }
  throw UsageError("--resume " + path + ": no complete checkpoint (" + unfinished_words(steps.front()) + ")");
}

Manifest read_manifest(const std::string& dir) {
  const std::string source = (fs::path(dir) / kManifest).string();
  std::ifstream in(source);
  if (!in) throw UsageError("checkpoint " + dir + ": " + unfinished_words(dir));
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("pieces") || !j.contains("tensors") || !j.contains("metadata"))
    throw UsageError(source + " is not a dtlab sharded manifest (metadata, tensors and pieces wanted)");
  Manifest m;
  m.dir = dir;
  try {
    const auto& meta = j["metadata"];
    m.world = meta.at("world").get<int>();
    m.position = {meta.at("step").get<int>(), meta.at("data_position").get<std::uint64_t>(),
                  std::stoull(meta.at("rng_state").get<std::string>(), nullptr, 16), meta.at("lab").get<std::string>()};
    for (const auto& [name, t] : j["tensors"].items())
      m.tensors[name] = {dtype_from(source, t.at("dtype").get<std::string>()),
                         t.at("shape").get<std::vector<std::int64_t>>()};
    for (const auto& p : j["pieces"])
      m.pieces.push_back({p.at("name").get<std::string>(), p.at("tensor").get<std::string>(),
                          p.at("file").get<std::string>(), p.at("rank").get<int>(),
                          p.at("elements")[0].get<std::size_t>(), p.at("elements")[1].get<std::size_t>(),
                          std::stoull(p.at("fnv1a64").get<std::string>(), nullptr, 16)});
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(source + " has a malformed entry: " + e.what());
  } catch (const std::logic_error& e) { throw UsageError(source + " has a malformed number: " + e.what()); }
  check_tiling(m, source);
  return m;
}

void verify_checkpoint(const Manifest& m) {
  for (const PieceEntry& p : m.pieces)
    if (std::string why = check_piece(m, p); !why.empty()) refuse_piece(m, p, why);
}

void verify_checkpoint(Comm& comm, const Manifest& m) {
  std::int32_t first_bad = std::int32_t(m.pieces.size());
  for (std::size_t i = std::size_t(comm.rank()); i < m.pieces.size(); i += std::size_t(comm.size()))
    if (!check_piece(m, m.pieces[i]).empty()) {
      first_bad = std::int32_t(i);
      break;
    }
  comm.all_reduce(&first_bad, &first_bad, 1, DType::i32, ReduceOp::min);
  if (first_bad < std::int32_t(m.pieces.size())) {  // every rank names the same piece: check it again here
    const PieceEntry& p = m.pieces[std::size_t(first_bad)];
    refuse_piece(m, p, check_piece(m, p));
  }
}

void require_tensor(const Manifest& m, const std::string& tensor, DType dtype, const std::vector<std::int64_t>& shape) {
  const auto it = m.tensors.find(tensor);
  if (it == m.tensors.end())
    throw UsageError("checkpoint " + m.dir + " has no tensor '" + tensor + "' (saved by the " + m.position.lab +
                     " lab); resume with the options it was saved with");
  if (it->second.dtype != dtype || it->second.shape != shape)
    throw UsageError("checkpoint " + m.dir + ": tensor '" + tensor + "' is " +
                     std::string(safetensors_dtype_name(it->second.dtype)) + " " + shape_text(it->second.shape) +
                     ", this run's is " + std::string(safetensors_dtype_name(dtype)) + " " + shape_text(shape) +
                     ": resume with the model options it was saved with");
}

std::size_t read_tensor_range(const Manifest& m, const std::string& tensor, std::size_t begin, std::size_t end,
                              void* out) {
  const std::size_t size = dtype_size(m.tensors.at(tensor).dtype);
  std::size_t read = 0;
  for (const PieceEntry& p : m.pieces) {
    const std::size_t lo = std::max(begin, p.begin), hi = std::min(end, p.end);
    if (p.tensor != tensor || lo >= hi) continue;
    char* dst = static_cast<char*>(out) + (lo - begin) * size;
    if (std::string why = read_piece(m, p, lo - p.begin, hi - p.begin, dst); !why.empty()) refuse_piece(m, p, why);
    read += (hi - lo) * size;
  }
  return read;
}

}  // namespace dtl
