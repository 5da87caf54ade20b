// MPI_COMM_WORLD as the run's process group (driver/mpi/launch.h), through the MPI C API. Large
// transfers go point to point, one message per item (an item must stay under 2 GiB, MPI's int
// counts); only the small all_gather uses a collective.
//
// Waiting never spins: OpenMPI's blocking calls busy-poll a core, and a rank waiting for the
// others (a non-measuring rank while its node's measuring rank times kernels, rank 0 while the
// others search) would skew the timings of its node. Every wait here is a nonblocking call
// polled with MPI_Test / MPI_Iprobe and a sleep that grows to 10 ms.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/error.h"
#include "driver/mpi/launch.h"

namespace steptp::mpi {
namespace {

constexpr int kCountTag = 1, kItemTag = 2;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw base::Error(base::ErrorKind::Failed, std::string("MPI: ") + what + " failed");
}

int int_size(size_t n) {
  if (n > size_t(INT_MAX)) throw base::Error(base::ErrorKind::Failed, "MPI: a message over 2 GiB");
  return int(n);
}

// Sleeps between polls: 50 us, doubling to 10 ms.
class Backoff {
 public:
  void pause() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    us_ = std::min(us_ * 2, 10000);
  }

 private:
  int us_ = 50;
};

void wait(MPI_Request& req, const char* what) {
  Backoff b;
  for (int done = 0;;) {
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    b.pause();
  }
}

// Waits (without spinning) until a message from `from` with `tag` can be received.
MPI_Status probe(int from, int tag) {
  Backoff b;
  MPI_Status st;
  for (int ready = 0;;) {
    check(MPI_Iprobe(from, tag, MPI_COMM_WORLD, &ready, &st), "MPI_Iprobe");
    if (ready) return st;
    b.pause();
  }
}

void send(const void* data, int count, MPI_Datatype type, int to, int tag) {
  MPI_Request req;
  check(MPI_Isend(data, count, type, to, tag, MPI_COMM_WORLD, &req), "MPI_Isend");
  wait(req, "MPI_Isend");
}

void send_items(const std::vector<std::string>& items, int to) {
  uint64_t n = items.size();
  send(&n, 1, MPI_UINT64_T, to, kCountTag);
  for (const auto& s : items) send(s.data(), int_size(s.size()), MPI_CHAR, to, kItemTag);
}

// Messages from one sender with one tag arrive in the order sent (MPI's non-overtaking rule).
void receive_items(int from, std::vector<std::string>& into) {
  uint64_t n = 0;
  probe(from, kCountTag);
  check(MPI_Recv(&n, 1, MPI_UINT64_T, from, kCountTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  for (uint64_t i = 0; i < n; ++i) {
    MPI_Status st = probe(from, kItemTag);
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    std::string s(size_t(len), '\0');
    check(MPI_Recv(s.data(), len, MPI_CHAR, from, kItemTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    into.push_back(std::move(s));
  }
}

class MpiCluster final : public dataset::Cluster {
 public:
  MpiCluster() {
    // Only the main thread calls MPI; forked workers never do (they _exit).
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // The measuring rank of a node is its lowest rank. STEPTP_MEASURE_GROUP names the group
    // instead of the host: one measuring rank per socket (each with its own timing lock), or
    // ranks on one machine standing for separate nodes (the tests).
    std::string group;
    if (const char* g = std::getenv("STEPTP_MEASURE_GROUP"); g && *g) {
      group = std::string("group:") + g;
    } else {
      char name[MPI_MAX_PROCESSOR_NAME];
      int len = 0;
      MPI_Get_processor_name(name, &len);
      group = std::string("host:") + std::string(name, size_t(len));
    }
    auto groups = all_gather(group);
    measuring_ = true;
    for (int r = 0; r < rank_; ++r)
      if (groups[size_t(r)] == group) measuring_ = false;
  }
  ~MpiCluster() override {
    // The ranks that finish first wait here for rank 0 (writing the outputs) without spinning;
    // MPI_Finalize then has nothing left to wait for.
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) == MPI_SUCCESS) {
      Backoff b;
      for (int done = 0; MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;) b.pause();
    }
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool measuring() const override { return measuring_; }

  std::vector<std::string> all_gather(const std::string& mine) override {
    int len = int_size(mine.size());
    std::vector<int> lens(size_t(size_), 0), offsets(size_t(size_), 0);
    MPI_Request req;
    check(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &req), "MPI_Iallgather");
    wait(req, "MPI_Iallgather");
    size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[size_t(r)] = int_size(total);
      total += size_t(lens[size_t(r)]);
    }
    std::string all(int_size(total), '\0');
    check(MPI_Iallgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR,
                          MPI_COMM_WORLD, &req),
          "MPI_Iallgatherv");
    wait(req, "MPI_Iallgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(size_t(offsets[size_t(r)]), size_t(lens[size_t(r)])));
    return out;
  }

  std::vector<std::string> gather(std::vector<std::string> mine) override {
    if (rank_ != 0) {
      send_items(mine, 0);
      return {};
    }
    for (int r = 1; r < size_; ++r) receive_items(r, mine);
    return mine;
  }

  std::vector<std::string> scatter(std::vector<std::vector<std::string>> per_rank) override {
    if (rank_ != 0) {
      std::vector<std::string> mine;
      receive_items(0, mine);
      return mine;
    }
    for (int r = 1; r < size_; ++r) send_items(per_rank.at(size_t(r)), r);
    return std::move(per_rank.at(0));
  }

 private:
  int rank_ = 0, size_ = 1;
  bool measuring_ = true;
};

}  // namespace

std::unique_ptr<dataset::Cluster> join_cluster() {
  // One rank (no launcher, or `mpirun -n 1`) is one process: no MPI_Init.
  if (dataset::launcher_world_size() <= 1) return std::make_unique<dataset::SingleProcess>();
  return std::make_unique<MpiCluster>();
}

void abort_all(dataset::Cluster& cluster, int code) {
  if (cluster.size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace steptp::mpi
