// The processes one `steptp generate` run is spread over (docs/mpi.md). A single process is the
// one-rank case of the same pipeline; `mpirun -n N steptp generate` gives N ranks (driver/mpi/launch.h,
// the MPI C API). The pipeline only needs these few collective operations, so the dataset
// module does not depend on MPI, and steptp builds without it.
//
// Every operation is collective: all ranks call it, in the same order.
#pragma once

#include <string>
#include <vector>

namespace steptp::dataset {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank times kernels for its node (the lowest rank of each node, or of each
  // STEPTP_MEASURE_GROUP): one measuring rank per machine, as the timing policy wants
  // (search/tune/timing_lock.h).
  virtual bool measuring() const = 0;
  // Every rank's `mine`, in rank order, on every rank. For small messages (a few MB at most).
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
  // Rank 0 gets every rank's items, in rank order (its own first); other ranks get {}.
  virtual std::vector<std::string> gather(std::vector<std::string> mine) = 0;
  // Rank 0 hands per_rank[r] (size() parts) to rank r; every rank returns its part.
  virtual std::vector<std::string> scatter(std::vector<std::vector<std::string>> per_rank) = 0;
};

class SingleProcess final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool measuring() const override { return true; }
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
  std::vector<std::string> gather(std::vector<std::string> mine) override { return mine; }
  std::vector<std::string> scatter(std::vector<std::vector<std::string>> per_rank) override {
    return std::move(per_rank.at(0));
  }
};

// How many processes an MPI launcher (mpirun/mpiexec, srun) started this one with, from the
// environment it sets (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS); 0 when none did.
int launcher_world_size();

}  // namespace steptp::dataset
