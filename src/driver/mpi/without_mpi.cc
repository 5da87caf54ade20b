// steptp built without MPI: single process only (driver/mpi/launch.h).
#include <stdexcept>
#include <string>

#include "base/error.h"
#include "driver/mpi/launch.h"

namespace steptp::mpi {

std::unique_ptr<dataset::Cluster> join_cluster() {
  int n = dataset::launcher_world_size();
  if (n > 1)
    throw base::Error(
        base::ErrorKind::Failed,
        "started as one of " + std::to_string(n) +
            " MPI ranks, but this steptp was built without MPI, so every rank would run the whole job: install "
            "OpenMPI (apt-get install libopenmpi-dev openmpi-bin) and rebuild (scripts/build.sh), or run without "
            "mpirun");
  return std::make_unique<dataset::SingleProcess>();
}

void abort_all(dataset::Cluster&, int) {}

}  // namespace steptp::mpi
