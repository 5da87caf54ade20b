// The process group of this run (docs/mpi.md). Built with MPI (OpenMPI's libopenmpi-dev found
// at configure time: mpi_cluster.cc), a process started by an MPI launcher (mpirun, srun) joins
// MPI_COMM_WORLD; any other process is a single rank. Built without MPI (without_mpi.cc), a
// process started by a launcher with more than one rank is refused with a clear error, so
// `mpirun -n N steptp generate` never runs N identical jobs over one output folder.
#pragma once

#include <memory>

#include "apps/dataset/cluster.h"

namespace steptp::mpi {

// Throws base::Error (Failed) when started by a multi-rank launcher but built without MPI.
// MPI_Init happens here and MPI_Finalize when the cluster is destroyed.
std::unique_ptr<dataset::Cluster> join_cluster();

// Ends every rank of the run (MPI_Abort) with `code`; returns in a single process.
void abort_all(dataset::Cluster& cluster, int code);

}  // namespace steptp::mpi
