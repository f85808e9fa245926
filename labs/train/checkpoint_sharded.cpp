// Saving a sharded checkpoint (labs/train/checkpoint_sharded.h): every rank's file, then the
// manifest, then the rename that makes the checkpoint exist.
#include "labs/train/checkpoint_sharded.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/error.h"
#include "core/trace/trace.h"
#include "core/util/atomic_file.h"
#include "core/util/safetensors.h"

namespace dtl {

namespace fs = std::filesystem;

std::uint64_t fnv1a64(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 14695981039346656037ull;                              // the offset basis
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;  // the 64-bit FNV prime
  return h;
}

namespace {

std::string step_folder(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%06d", step);
  return name;
}

std::string rank_file(int rank, int world) {
  char name[64];
  std::snprintf(name, sizeof name, "rank-%05d-of-%05d.safetensors", rank, world);
  return name;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string piece_name(const PieceView& p) { return p.tensor + "@" + std::to_string(p.begin); }

// This rank's file, through a temporary name. A rank with the injected fault writes half of
// its bytes and throws, as a process killed mid-write would leave nothing under the final name.
void write_rank_file(int rank, const std::string& path, const std::vector<PieceView>& pieces,
                     const SaveFaults& faults) {
  SafeTensors st(path);
  for (const PieceView& p : pieces) {
    if (p.end < p.begin) throw Error("checkpoint piece " + piece_name(p) + " ends before it begins");
    st.add(piece_name(p), p.dtype, {std::int64_t(p.end - p.begin)}, p.data);
  }
  const std::string bytes = encode_safetensors(st);
  AtomicFile out(path, "the checkpoint piece");
  if (rank == faults.fault_rank) {
    out.write(bytes.data(), bytes.size() / 2);
    throw Error("injected fault: rank " + std::to_string(rank) + " failed half-way through writing " + path);
  }
  out.write(bytes.data(), bytes.size());
  out.commit();
}

nlohmann::json piece_entries(const std::vector<PieceView>& pieces, int rank, const std::string& file) {
  nlohmann::json out = nlohmann::json::array();
  for (const PieceView& p : pieces) {
    const std::size_t size = dtype_size(p.dtype);
    out.push_back({{"name", piece_name(p)},
                   {"tensor", p.tensor},
                   {"dtype", safetensors_dtype_name(p.dtype)},
                   {"shape", p.shape},
                   {"file", file},
                   {"rank", rank},
                   {"elements", {p.begin, p.end}},
                   {"byte_range", {p.begin * size, p.end * size}},
                   {"fnv1a64", hex(fnv1a64(p.data, (p.end - p.begin) * size))}});
  }
  return out;
}

// Every rank's text on every rank (lengths first, then the texts padded to the longest).
std::vector<std::string> all_gather_text(Comm& comm, const std::string& text) {
  const std::int64_t length = std::int64_t(text.size());
  std::vector<std::int64_t> lengths(std::size_t(comm.size()));
  comm.all_gather(&length, lengths.data(), 1, DType::i64);
  std::int64_t longest = 0;
  for (std::int64_t l : lengths) longest = std::max(longest, l);
  const std::size_t words = std::size_t(longest + 3) / 4;  // sent as i32 words
  std::vector<std::int32_t> mine(words, 0), all(words * std::size_t(comm.size()));
  std::memcpy(mine.data(), text.data(), text.size());
  comm.all_gather(mine.data(), all.data(), words, DType::i32);
  std::vector<std::string> out;
  out.reserve(std::size_t(comm.size()));
  for (int r = 0; r < comm.size(); ++r)
    out.emplace_back(reinterpret_cast<const char*>(all.data() + std::size_t(r) * words), std::size_t(lengths[r]));
  return out;
}

nlohmann::json manifest_json(const std::vector<std::string>& rank_pieces, const TrainPosition& pos, int world) {
  nlohmann::json m;
  m["metadata"] = {
      {"format", "dtlab-sharded"},       {"version", 1},   {"step", pos.step}, {"data_position", pos.data_position},
      {"rng_state", hex(pos.rng_state)}, {"lab", pos.lab}, {"world", world}};
  nlohmann::json weight_map = nlohmann::json::object(), tensors = nlohmann::json::object();
  nlohmann::json pieces = nlohmann::json::array();
  std::uint64_t total = 0;
  for (const std::string& text : rank_pieces)
    for (const nlohmann::json& p : nlohmann::json::parse(text)) {
      weight_map[p["name"].get<std::string>()] = p["file"];
      tensors[p["tensor"].get<std::string>()] = {{"dtype", p["dtype"]}, {"shape", p["shape"]}};
      total += p["byte_range"][1].get<std::uint64_t>() - p["byte_range"][0].get<std::uint64_t>();
      nlohmann::json entry = p;
      entry.erase("dtype"), entry.erase("shape");  // the tensor's, kept once under "tensors"
      pieces.push_back(entry);
    }
  m["metadata"]["total_size"] = total;  // as Hugging Face's index: the bytes of every tensor
  m["weight_map"] = weight_map;
  m["tensors"] = tensors;
  m["pieces"] = pieces;
  return m;
}

// Rank 0 makes ROOT/step-N.partial empty before anyone writes into it.
void prepare_staging(Comm& comm, const fs::path& staging) {
  std::int32_t ok = 1;
  std::string why;
  if (comm.rank() == 0) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    fs::create_directories(staging, ec);
    if (ec) ok = 0, why = ec.message();
  }
  comm.broadcast(&ok, 1, DType::i32, 0);
  if (!ok)
    throw CheckpointNotSaved("cannot create the checkpoint folder " + staging.string() +
                             (why.empty() ? "" : ": " + why));
}

// The manifest last, then the folder under its final name (an older one of that step moved aside first).
void publish(const fs::path& staging, const fs::path& final_dir, const nlohmann::json& manifest) {
  write_file_atomically((staging / "model.safetensors.index.json").string(), manifest.dump(1), "the manifest");
  const fs::path old = final_dir.string() + ".old";
  std::error_code ec;
  fs::remove_all(old, ec);
  if (fs::exists(final_dir)) fs::rename(final_dir, old);
  fs::rename(staging, final_dir);
  fs::remove_all(old, ec);
}

}  // namespace

ShardedSave::ShardedSave(Comm& comm, const std::string& root, std::vector<PieceView> pieces, const TrainPosition& pos,
                         bool async, std::shared_ptr<const void> staging, const SaveFaults& faults)
    : comm_(comm), pieces_(std::move(pieces)), pos_(pos), staging_(std::move(staging)), faults_(faults) {
  const fs::path final_dir = fs::path(root) / step_folder(pos.step);
  final_dir_ = final_dir.string();
  staging_dir_ = final_dir_ + ".partial";
  file_ = rank_file(comm.rank(), comm.size());
  prepare_staging(comm, staging_dir_);
  launch_ = std::chrono::steady_clock::now();
  if (const Trace* trace = comm.trace()) launch_ns_ = trace->now_ns();
  if (async)
    writer_ = std::thread([this] { write(); });
  else
    write();
}

ShardedSave::~ShardedSave() {
  if (writer_.joinable()) writer_.join();
}

void ShardedSave::write() {
  const auto start = std::chrono::steady_clock::now();
  try {
    write_rank_file(comm_.rank(), (fs::path(staging_dir_) / file_).string(), pieces_, faults_);
  } catch (const UsageError&) { crash_ = std::current_exception(); } catch (const Error& e) {
    if (comm_.rank() == faults_.fault_rank)
      crash_ = std::current_exception();  // the injected crash: this rank stops at finish()
    else
      why_ = e.what();
  }
  const auto end = std::chrono::steady_clock::now();
  write_s_ = std::chrono::duration<double>(end - start).count();
  // On the trace's clock, from the rank thread's reading at the launch (a writer thread has no
  // rank clock of its own: a stepped run stops the rank's, not the writer's).
  auto since_launch = [&](std::chrono::steady_clock::time_point t) {
    return launch_ns_ + std::chrono::duration_cast<std::chrono::nanoseconds>(t - launch_).count();
  };
  if (launch_ns_ >= 0) write_begin_ns_ = since_launch(start), write_end_ns_ = since_launch(end);
}

// Rank 0 removes a save's staging folder once every rank is done with it (the all-gather
// before this call): a failed save leaves no temporary behind.
void remove_staging(Comm& comm, const std::string& staging) {
  std::error_code ec;
  if (comm.rank() == 0) fs::remove_all(staging, ec);
}

std::string ShardedSave::finish() {
  if (writer_.joinable()) writer_.join();
  if (crash_) std::rethrow_exception(crash_);
  // The barrier that carries failures: every rank learns which ranks could not write, and why
  // (the first failing rank's words: the file and the errno's, from the one writer).
  const std::vector<std::string> whys = all_gather_text(comm_, why_);
  std::string failed, first_why;
  for (int r = 0; r < comm_.size(); ++r) {
    if (whys[std::size_t(r)].empty()) continue;
    failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    if (first_why.empty()) first_why = "rank " + std::to_string(r) + ": " + whys[std::size_t(r)];
  }
  const std::string head = "checkpoint of step " + std::to_string(pos_.step) + " not saved: ";
  const std::string kept = "; the previous checkpoints are unchanged";
  if (!failed.empty()) {
    remove_staging(comm_, staging_dir_);
    throw CheckpointNotSaved(head + "rank(s) " + failed + " could not write their pieces (" + first_why + ")" + kept);
  }
  const std::vector<std::string> all = all_gather_text(comm_, piece_entries(pieces_, comm_.rank(), file_).dump());
  std::int32_t published = 1;
  std::string why;
  if (comm_.rank() == 0) try {
      publish(staging_dir_, final_dir_, manifest_json(all, pos_, comm_.size()));
    } catch (const std::exception& e) { published = 0, why = e.what(); }
  comm_.broadcast(&published, 1, DType::i32, 0);
  if (!published) {
    remove_staging(comm_, staging_dir_);
    throw CheckpointNotSaved(head + "rank 0 could not write the manifest" + (why.empty() ? "" : " (" + why + ")") +
                             kept);
  }
  return final_dir_;
}

std::string save_sharded_checkpoint(Comm& comm, const std::string& root, const std::vector<PieceView>& pieces,
                                    const TrainPosition& pos, const SaveFaults& faults) {
  return ShardedSave(comm, root, pieces, pos, false, nullptr, faults).finish();
}

}  // namespace dtl
