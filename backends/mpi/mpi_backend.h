// kc — the mpi backend: OpenMPI collectives (all_reduce, reduce_scatter,
// all_gather) run on K real ranks of an mpirun job on this machine, one impl
// per coll/tuned algorithm (docs/backends/mpi.md).
//
// kc does not link MPI. The impls hand each call to kc-mpi-worker, an MPI
// program started once per kc process with mpirun (mpi_job.h); without the
// worker (kc built without MPI) or without mpirun the backend reports why.
#pragma once

#include <memory>
#include <string>

#include "kc/backend.h"

namespace kc::backends {

struct MpiBackendOptions {
  /// kc-mpi-worker; empty: $KC_MPI_WORKER, else the one built with kc, else next to kc's executable.
  std::string worker;
  /// mpirun; empty: $KC_MPIRUN, else the one found at configure time, else mpirun on $PATH.
  std::string mpirun;
  /// Ranks the job starts with (a call asking for more restarts it larger); 0: $KC_MPI_RANKS or 32.
  int world = 0;
};

std::unique_ptr<Backend> make_mpi_backend(MpiBackendOptions options = {});

namespace mpi {
/// The kc-mpi-worker and mpirun the backend uses by default (see
/// MpiBackendOptions); empty when there is none.
std::string default_worker();
std::string default_mpirun();
}  // namespace mpi

}  // namespace kc::backends
