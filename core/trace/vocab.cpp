#include "core/trace/vocab.h"

#include <array>
#include <iterator>
#include <string>

#include "core/error.h"

namespace dtl {

namespace {

constexpr std::array kCollectiveNames = {"",       "all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                         "reduce", "all_to_all", "barrier",        "all_to_allv"};
constexpr std::array kAlgorithmNames = {"",    "library",     "naive",       "ring",        "tree",
                                        "rhd", "ring_sliced", "double_tree", "hierarchical"};
constexpr std::array kRunPartNames = {"",      "setup", "timed", "check", "reference", "checkpoint", "checkpoint_write",
                                      "resume"};
constexpr std::array kPassNames = {"", "forward", "backward", "weight", "optimizer", "recompute"};
constexpr std::array kPassLetters = {"", "F", "B", "W", "", ""};
static_assert(kPassLetters.size() == std::size_t(Pass::recompute) + 1, "one letter (or none) per Pass");
constexpr std::array kStepUnitNouns = {"transfer", "collective"};
constexpr std::array kScheduleNames = {"gpipe", "1f1b",           "interleaved", "zb-h1", "zb-h2",
                                       "zb-v",  "interleaved-zb", "dualpipev",   "csv"};
constexpr std::array kExpertExchangeNames = {"", "counts", "dispatch", "combine"};
constexpr std::array kMetaKeyNames = {"lab",
                                      "world_size",
                                      "chunks",
                                      "bytes",
                                      "dtype",
                                      "device",
                                      "schedule",
                                      "report",
                                      "error",
                                      "source",
                                      "grid",
                                      "gpus_per_node",
                                      "tp_split",
                                      "simulated",
                                      "simulated_ranks",
                                      "predicted_bytes_per_rank",
                                      "predicted_bytes_formula",
                                      "phase_formula_bytes",
                                      "phase_formula_text",
                                      "pipeline_simulated",
                                      "live_plots",
                                      "micro-batches",
                                      "predicted_bytes_of_rank",
                                      "moe_routing",
                                      "activation_formula"};
static_assert(kMetaKeyNames.size() == std::size_t(MetaKey::activation_formula) + 1, "one name per MetaKey");

template <class Enum, std::size_t N>
const char* name_in(const std::array<const char*, N>& names, Enum e) {
  const auto i = std::size_t(e);
  return i < N ? names[i] : "?";
}

template <class Enum, std::size_t N>
std::optional<Enum> parse_in(const std::array<const char*, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return Enum(i);
  return std::nullopt;
}

void member(std::string& out, const char* key, std::string_view value) {
  out += ",\"";
  out += key;
  out += "\":\"";
  out += value;  // every name above is plain ASCII without quotes
  out += '"';
}

void member(std::string& out, const char* key, int value) {
  out += ",\"" + std::string(key) + "\":" + std::to_string(value);
}

}  // namespace

const char* collective_kind_name(CollectiveKind c) { return name_in(kCollectiveNames, c); }
const char* algorithm_kind_name(AlgorithmKind a) { return name_in(kAlgorithmNames, a); }
const char* run_part_name(RunPart p) { return name_in(kRunPartNames, p); }
const char* pass_name(Pass p) { return name_in(kPassNames, p); }
const char* schedule_kind_name(ScheduleKind s) { return name_in(kScheduleNames, s); }
std::optional<CollectiveKind> parse_collective_kind(std::string_view s) {
  return parse_in<CollectiveKind>(kCollectiveNames, s);
}
std::optional<AlgorithmKind> parse_algorithm_kind(std::string_view s) {
  return parse_in<AlgorithmKind>(kAlgorithmNames, s);
}
std::optional<RunPart> parse_run_part(std::string_view s) { return parse_in<RunPart>(kRunPartNames, s); }
std::optional<Pass> parse_pass(std::string_view s) { return parse_in<Pass>(kPassNames, s); }
std::optional<ScheduleKind> parse_schedule_kind(std::string_view s) {
  return parse_in<ScheduleKind>(kScheduleNames, s);
}
const char* expert_exchange_name(ExpertExchange x) { return name_in(kExpertExchangeNames, x); }
std::optional<ExpertExchange> parse_expert_exchange(std::string_view s) {
  return parse_in<ExpertExchange>(kExpertExchangeNames, s);
}
const char* pass_letter(Pass p) { return name_in(kPassLetters, p); }
std::optional<Pass> parse_pass_letter(std::string_view s) {
  if (s.empty()) return std::nullopt;  // "" is the letter of no schedule action
  return parse_in<Pass>(kPassLetters, s);
}
const char* step_unit_noun(StepUnit u) { return name_in(kStepUnitNouns, u); }

std::string role_json_members(const Role& r) {
  std::string out;
  if (r.collective != CollectiveKind::none) member(out, "collective", collective_kind_name(r.collective));
  if (r.algorithm != AlgorithmKind::none) member(out, "algorithm", algorithm_kind_name(r.algorithm));
  if (r.part != RunPart::none) member(out, "part", run_part_name(r.part));
  if (r.pass != Pass::none) member(out, "pass", pass_name(r.pass));
  if (r.schedule) member(out, "schedule", schedule_kind_name(*r.schedule));
  if (r.zero_stage >= 0) member(out, "zero_stage", r.zero_stage);
  if (r.prefetch >= 0) member(out, "prefetch", r.prefetch);
  if (r.block >= 0) member(out, "block", r.block);
  if (r.bucket >= 0) member(out, "bucket", r.bucket);
  if (r.exchange != ExpertExchange::none) member(out, "exchange", expert_exchange_name(r.exchange));
  return out;
}

namespace {
thread_local Role t_collective_extra;  // ScopedCollectiveRole's fields for this thread
}  // namespace

Role library_collective_role(CollectiveKind c) {
  Role r = t_collective_extra;
  r.collective = c, r.algorithm = AlgorithmKind::library;
  return r;
}

ScopedCollectiveRole::ScopedCollectiveRole(const Role& extra) : saved_(t_collective_extra) {
  t_collective_extra = extra;
}
ScopedCollectiveRole::~ScopedCollectiveRole() { t_collective_extra = saved_; }

std::uint64_t role_code(const Role& r) {
  // Each field has its bits (stage 20-23, prefetch 24-31, block 32-47, bucket 48-61, exchange
  // 62-63). The int8 stage could reach into prefetch's bits; a stage past 14 or a bucket past
  // 16382 would alias another Role.
  if (r.zero_stage > 14)
    throw Error("role_code: ZeRO stage " + std::to_string(r.zero_stage) + " is out of its range (0..14)");
  if (r.bucket > 16382)
    throw Error("role_code: bucket " + std::to_string(r.bucket) + " is out of its range (0..16382)");
  return std::uint64_t(r.collective) | std::uint64_t(r.algorithm) << 4 | std::uint64_t(r.part) << 8 |
         std::uint64_t(r.pass) << 12 | std::uint64_t(r.schedule ? int(*r.schedule) + 1 : 0) << 16 |
         std::uint64_t(std::uint8_t(r.zero_stage + 1)) << 20 | std::uint64_t(std::uint8_t(r.prefetch + 1)) << 24 |
         std::uint64_t(std::uint16_t(r.block + 1)) << 32 | std::uint64_t(std::uint16_t(r.bucket + 1)) << 48 |
         std::uint64_t(r.exchange) << 62;
}

std::string role_key(const Role& r) {
  std::string members = role_json_members(r), out;
  for (char c : members) {  // `,"zero_stage":2` → `zero_stage=2`, members joined by ','
    if (c == '"') continue;
    out += c == ':' ? '=' : c;
  }
  return out.empty() ? out : out.substr(1);
}

const char* meta_key_name(MetaKey k) { return name_in(kMetaKeyNames, k); }
std::string meta_key_name(MetaKey prefix, std::string_view suffix) {
  return std::string(meta_key_name(prefix)) + "." + std::string(suffix);
}

std::string role_purpose(const Role& r) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : " · ") + s; };
  if (r.exchange != ExpertExchange::none) add(std::string("MoE ") + expert_exchange_name(r.exchange));
  if (r.bucket >= 0) add("gradient bucket " + std::to_string(r.bucket));
  if (r.block >= 0) add("layer " + std::to_string(r.block));
  if (r.pass != Pass::none) add(pass_name(r.pass));
  if (r.zero_stage >= 0) add("ZeRO-" + std::to_string(r.zero_stage));
  return out;
}

const char* provenance_name(Provenance p) { return p == Provenance::simulated ? "simulated" : "formula"; }

std::optional<Provenance> parse_provenance(std::string_view s) {
  for (const Provenance p : {Provenance::formula, Provenance::simulated})
    if (s == provenance_name(p)) return p;
  return std::nullopt;
}

}  // namespace dtl
