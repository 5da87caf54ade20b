#include "apps/dataset/cluster.h"

#include <algorithm>
#include <cstdlib>

namespace steptp::dataset {

int launcher_world_size() {
  // OpenMPI's mpirun, MPICH/Hydra (and Slurm's PMI), a Slurm job step (srun).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* v = std::getenv(var); v && *v) return std::max(1, std::atoi(v));
  return 0;
}

}  // namespace steptp::dataset
