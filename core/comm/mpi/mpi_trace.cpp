// Merging every rank's events on rank 0: clock offsets (exact from the shared steady
// clock for ranks on rank 0's host, by ping-pong for the others), labels by name and role,
// and flow ids joining the k-th send from a to b with tag t to the k-th such receive
// (MPI delivers messages of one (source, tag, communicator) in order).
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "core/comm/mpi/mpi_check.h"
#include "core/comm/mpi_backend.h"
#include "core/trace/trace.h"

namespace dtl {

namespace {

constexpr int kTagClock = 32001, kTagSize = 32002, kTagEvents = 32003, kTagLabels = 32004, kTagRoles = 32005;

// Offset of rank r's clock relative to rank 0's: the reply with the shortest round trip
// bounds the error by half of it.
std::int64_t clock_offset(const Trace& t, int me, int r) {
  std::int64_t best_rtt = INT64_MAX, best = 0;
  for (int round = 0; round < 20; ++round) {
    if (me == 0) {
      const std::int64_t t0 = t.now_ns();
      std::int64_t theirs = 0;
      DTL_MPI_CHECK(MPI_Send(&t0, 1, MPI_INT64_T, r, kTagClock, MPI_COMM_WORLD));
      DTL_MPI_CHECK(MPI_Recv(&theirs, 1, MPI_INT64_T, r, kTagClock, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      const std::int64_t t1 = t.now_ns();
      if (t1 - t0 < best_rtt) {
        best_rtt = t1 - t0;
        best = theirs - (t0 + t1) / 2;
      }
    } else if (me == r) {
      std::int64_t ping = 0;
      DTL_MPI_CHECK(MPI_Recv(&ping, 1, MPI_INT64_T, 0, kTagClock, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      const std::int64_t now = t.now_ns();
      DTL_MPI_CHECK(MPI_Send(&now, 1, MPI_INT64_T, 0, kTagClock, MPI_COMM_WORLD));
    }
  }
  return best;
}

std::string join_labels(const std::vector<std::string>& labels) {
  std::string s;
  for (const auto& l : labels) s += l + '\n';
  return s;
}

std::vector<std::string> split_labels(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\n') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

// Rank r's clock minus rank 0's, for every rank: exact from the shared steady clock on rank
// 0's host, by ping-pong elsewhere.
std::vector<std::int64_t> clock_offsets(const Trace& local, int me, int P) {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  DTL_MPI_CHECK(MPI_Get_processor_name(host, &len));
  std::vector<char> hosts(std::size_t(P) * MPI_MAX_PROCESSOR_NAME);
  DTL_MPI_CHECK(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                              MPI_COMM_WORLD));
  std::vector<long long> epochs(static_cast<std::size_t>(P));
  long long my_epoch = local.epoch_steady_ns();
  DTL_MPI_CHECK(MPI_Allgather(&my_epoch, 1, MPI_LONG_LONG, epochs.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD));
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(P), 0);
  for (int r = 1; r < P; ++r) {
    const bool same_host =
        std::strncmp(&hosts[0], &hosts[std::size_t(r) * MPI_MAX_PROCESSOR_NAME], MPI_MAX_PROCESSOR_NAME) == 0;
    offsets[std::size_t(r)] = same_host ? epochs[0] - epochs[std::size_t(r)] : clock_offset(local, me, r);
  }
  return offsets;
}

// A rank's events with its label table: names joined by newlines, roles as raw bytes
// (every rank runs the same binary, so Role's layout is the same).
void send_to_root(const std::vector<Event>& mine, const Trace& local) {
  const std::string labels = join_labels(local.labels());
  const std::vector<Role> roles = local.roles();
  const long long sizes[3] = {static_cast<long long>(mine.size()), static_cast<long long>(labels.size()),
                              static_cast<long long>(roles.size())};
  DTL_MPI_CHECK(MPI_Send(sizes, 3, MPI_LONG_LONG, 0, kTagSize, MPI_COMM_WORLD));
  DTL_MPI_CHECK(MPI_Send(mine.data(), int(mine.size() * sizeof(Event)), MPI_BYTE, 0, kTagEvents, MPI_COMM_WORLD));
  DTL_MPI_CHECK(MPI_Send(labels.data(), int(labels.size()), MPI_CHAR, 0, kTagLabels, MPI_COMM_WORLD));
  DTL_MPI_CHECK(MPI_Send(roles.data(), int(roles.size() * sizeof(Role)), MPI_BYTE, 0, kTagRoles, MPI_COMM_WORLD));
}

// Rank r's events, moved onto rank 0's clock and into the merged label table.
std::vector<Event> receive_from(int r, std::int64_t offset, Trace& merged) {
  long long sizes[3] = {0, 0, 0};
  DTL_MPI_CHECK(MPI_Recv(sizes, 3, MPI_LONG_LONG, r, kTagSize, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  std::vector<Event> evs(static_cast<std::size_t>(sizes[0]));
  std::string labels(std::size_t(sizes[1]), '\0');
  std::vector<Role> roles(static_cast<std::size_t>(sizes[2]));
  DTL_MPI_CHECK(MPI_Recv(evs.data(), int(evs.size() * sizeof(Event)), MPI_BYTE, r, kTagEvents, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
  DTL_MPI_CHECK(
      MPI_Recv(labels.data(), int(labels.size()), MPI_CHAR, r, kTagLabels, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  DTL_MPI_CHECK(MPI_Recv(roles.data(), int(roles.size() * sizeof(Role)), MPI_BYTE, r, kTagRoles, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
  const std::vector<std::string> names = split_labels(labels);
  std::vector<std::uint16_t> merged_id(names.size());  // rank r's label id → the merged table's, once per label
  for (std::size_t i = 0; i < names.size(); ++i)
    merged_id[i] = merged.label(names[i], i < roles.size() ? roles[i] : Role{});
  for (Event& e : evs) {
    e.begin_ns -= offset;
    e.end_ns -= offset;
    e.label = e.label < merged_id.size() ? merged_id[e.label] : 0;
  }
  return evs;
}

// Joins sends to receives: k-th send a→b tag t ↔ k-th receive at b from a with tag t.
void join_flows(std::vector<std::vector<Event>>& per_rank) {
  std::map<std::tuple<int, int, int>, std::vector<Event*>> sends, recvs;
  for (auto& evs : per_rank)
    for (Event& e : evs) {
      if (e.kind == EventKind::send) sends[{e.rank, e.peer, e.tag}].push_back(&e);
      if (e.kind == EventKind::recv) recvs[{e.peer, e.rank, e.tag}].push_back(&e);
    }
  std::uint64_t next_flow = 1;
  for (auto& [key, list] : sends) {
    auto& matching = recvs[key];
    auto by_post = [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; };
    std::sort(list.begin(), list.end(), by_post);
    std::sort(matching.begin(), matching.end(), by_post);
    for (std::size_t k = 0; k < std::min(list.size(), matching.size()); ++k)
      list[k]->flow_id = matching[k]->flow_id = next_flow++;
  }
}

}  // namespace

std::unique_ptr<Trace> merge_traces_on_root(const Trace& local) {
  int me = 0, P = 1;
  DTL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  DTL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &P));
  const std::vector<std::int64_t> offsets = clock_offsets(local, me, P);
  std::vector<Event> mine;
  for (int s = 0; s < Trace::kStreams; ++s) {
    const EventLog& log = local.log(me, s);
    for (std::size_t i = 0; i < log.size(); ++i) mine.push_back(log[i]);
  }
  if (me != 0) {
    send_to_root(mine, local);
    return nullptr;
  }
  auto merged = std::make_unique<Trace>(P);
  for (const auto& [k, v] : local.meta()) merged->set_meta(k, v);
  std::vector<std::vector<Event>> per_rank(static_cast<std::size_t>(P));
  per_rank[0] = mine;
  const std::vector<std::string> names = local.labels();
  const std::vector<Role> roles = local.roles();
  std::vector<std::uint16_t> merged_id(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) merged_id[i] = merged->label(names[i], roles[i]);
  for (Event& e : per_rank[0]) e.label = e.label < merged_id.size() ? merged_id[e.label] : 0;
  for (int r = 1; r < P; ++r) per_rank[std::size_t(r)] = receive_from(r, offsets[std::size_t(r)], *merged);
  join_flows(per_rank);
  for (auto& evs : per_rank)
    for (const Event& e : evs) merged->record(e);
  return merged;
}

}  // namespace dtl
