// Sharded checkpoints (labs/train/checkpoint_sharded.h) on thread ranks: saved by 4 ranks and
// read back by 3, 2 and 1, every element against the values the test generated itself, each
// rank reading only its byte range; and the failures: a changed byte, a lost file, a crash
// between the pieces and a full disk (a real file-size limit) leave the previous checkpoint
// loadable and the broken one refused by name.
#include "labs/train/checkpoint_sharded.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "labs/train/param_layout.h"
#include "tests/labs/checkpoint_test_util.h"

using namespace dtl;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kParams = 103;  // not a multiple of 4 or 3: the last shards are short
const std::vector<std::int64_t> kMatrix = {6, 5};

// The value of element i of each tensor: what every test compares with.
float param_value(std::size_t i) { return 0.25f * float(i) - 7.0f; }
float moment_value(std::size_t i) { return 1e-3f * float(i * i % 97); }
double matrix_value(std::size_t i) { return 1.0 / double(i + 1); }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(testing::TempDir()) / ("dtl_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Each rank's ZeRO shard of "params" and "adam.m" (flat, padded convention of param_layout.h) and
// whole rows of an f64 matrix (rank r: rows r, r + world, ...: pieces that are not one range).
RunResult save_on(int world, const fs::path& root, int step, const SaveFaults& faults = {}) {
  return run_threads({.world_size = world}, [&](Comm& comm) {
    const Range r = shard_of(kParams, comm.rank(), world).range;
    std::vector<float> params, moments;
    for (std::size_t i = r.begin; i < r.end; ++i) params.push_back(param_value(i)), moments.push_back(moment_value(i));
    std::vector<std::vector<double>> rows;
    std::vector<PieceView> pieces = {{"params", DType::f32, {std::int64_t(kParams)}, r.begin, r.end, params.data()},
                                     {"adam.m", DType::f32, {std::int64_t(kParams)}, r.begin, r.end, moments.data()}};
    for (int row = comm.rank(); row < kMatrix[0]; row += world) rows.emplace_back();
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::size_t row = std::size_t(comm.rank() + int(k) * world), cols = std::size_t(kMatrix[1]);
      for (std::size_t c = 0; c < cols; ++c) rows[k].push_back(matrix_value(row * cols + c));
      pieces.push_back({"w", DType::f64, kMatrix, row * cols, (row + 1) * cols, rows[k].data()});
    }
    save_sharded_checkpoint(comm, root.string(), pieces, {step, std::uint64_t(step) * 64, 7, "test"}, faults);
  });
}

// Every rank of `world` reads its shard of "params" and "adam.m" and the whole matrix; rank 0
// returns what it read of the whole (gathered), with the largest difference from the values.
double load_on(int world, const std::string& dir) {
  double worst = 0;
  const RunResult res = run_threads({.world_size = world}, [&](Comm& comm) {
    const Manifest m = read_manifest(dir);
    verify_checkpoint(comm, m);
    require_tensor(m, "params", DType::f32, {std::int64_t(kParams)});
    const Range r = shard_of(kParams, comm.rank(), world).range;
    std::vector<float> params(r.size()), moments(r.size());
    const std::size_t bytes = read_tensor_range(m, "params", r.begin, r.end, params.data());
    EXPECT_EQ(bytes, r.size() * 4) << "rank " << comm.rank() << " read more than its range";
    read_tensor_range(m, "adam.m", r.begin, r.end, moments.data());
    std::vector<double> w(30);
    read_tensor_range(m, "w", 0, 30, w.data());
    double diff = 0;
    for (std::size_t i = 0; i < r.size(); ++i)
      diff = std::max({diff, std::fabs(double(params[i]) - param_value(r.begin + i)),
                       std::fabs(double(moments[i]) - moment_value(r.begin + i))});
    for (std::size_t i = 0; i < w.size(); ++i) diff = std::max(diff, std::fabs(w[i] - matrix_value(i)));
    comm.all_reduce(&diff, &diff, 1, DType::f64, ReduceOp::max);
    if (comm.rank() == 0) worst = diff;
  });
  EXPECT_TRUE(res.ok()) << res.error;
  return worst;
}

std::string refusal(const std::string& dir) {
  try {
    verify_checkpoint(read_manifest(dir));
  } catch (const UsageError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(ShardedCheckpoint, Fnv1a64KnownVectors) {  // the published test vectors of FNV-1a 64
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

TEST(ShardedCheckpoint, SavedOnFourReadOnThreeTwoAndOne) {
  const fs::path root = fresh_dir("reshard");
  const RunResult saved = save_on(4, root, 3);
  ASSERT_TRUE(saved.ok()) << saved.error;
  ASSERT_TRUE(save_on(4, root, 3).ok());  // the same step saved again replaces it, leaving no .old or .partial
  EXPECT_FALSE(fs::exists(root / "step-000003.old"));
  EXPECT_FALSE(fs::exists(root / "step-000003.partial"));
  const std::string dir = resolve_checkpoint(root.string());
  EXPECT_EQ(fs::path(dir).filename(), "step-000003");
  const Manifest m = read_manifest(dir);
  EXPECT_EQ(m.world, 4);
  EXPECT_EQ(m.position.step, 3);
  EXPECT_EQ(m.position.data_position, 192u);
  EXPECT_EQ(m.position.rng_state, 7u);
  for (int world : {3, 2, 1}) {
    const double diff = load_on(world, dir);
    std::printf("4 ranks → %d: largest difference %g\n", world, diff);
    EXPECT_EQ(diff, 0);
  }
}

TEST(ShardedCheckpoint, ChangedOrMissingPiecesAreRefusedByName) {
  const fs::path root = fresh_dir("broken");
  ASSERT_TRUE(save_on(2, root, 1).ok());
  const fs::path dir = root / "step-000001";
  EXPECT_EQ(refusal(dir.string()), "");
  const fs::path file = dir / "rank-00001-of-00002.safetensors";
  {  // one byte of the last piece flipped
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = 0;
    f.get(c);
    f.seekp(-1, std::ios::end);
    f.put(char(c ^ 1));
  }
  std::string why = refusal(dir.string());
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  fs::remove(file);
  why = refusal(dir.string());
  EXPECT_NE(why.find("rank-00001-of-00002.safetensors is missing"), std::string::npos) << why;
}

TEST(ShardedCheckpoint, CrashBetweenPiecesLeavesThePreviousOne) {
  const fs::path root = fresh_dir("crash");
  ASSERT_TRUE(save_on(4, root, 1).ok());
  const RunResult crashed = save_on(4, root, 2, {.fault_rank = 2});
  EXPECT_FALSE(crashed.ok());
  EXPECT_NE(crashed.error.find("injected fault"), std::string::npos) << crashed.error;
  std::vector<std::string> skipped;
  const std::string dir = resolve_checkpoint(root.string(), &skipped);
  EXPECT_EQ(fs::path(dir).filename(), "step-000001");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("step-000002.partial"), std::string::npos) << skipped[0];
  // Rank 2's file is among the missing ones; a peer the abort stopped before its write can be too.
  const std::size_t missing = skipped[0].find("missing:");
  ASSERT_NE(missing, std::string::npos) << skipped[0];
  EXPECT_NE(skipped[0].find("rank-00002-of-00004.safetensors", missing), std::string::npos) << skipped[0];
  EXPECT_EQ(load_on(3, dir), 0);
  EXPECT_THROW(read_manifest((root / "step-000002.partial").string()), UsageError);
}

TEST(ShardedCheckpoint, FullDiskLeavesThePreviousOne) {
  const fs::path root = fresh_dir("full");
  ASSERT_TRUE(save_on(2, root, 1).ok());
  // A real file-size limit, as `ulimit -f` sets: every write past 512 bytes fails with EFBIG. A
  // piece file here is about 800 bytes.
  RunResult full;
  {
    const dtl::test::FileSizeLimit full_disk(512);
    full = save_on(2, root, 2);
  }
  EXPECT_FALSE(full.ok());
  EXPECT_NE(full.error.find("not saved"), std::string::npos) << full.error;
  std::printf("full disk: %s\n", full.error.c_str());
  const std::string dir = resolve_checkpoint(root.string());
  EXPECT_EQ(fs::path(dir).filename(), "step-000001");
  EXPECT_EQ(load_on(2, dir), 0);
}
