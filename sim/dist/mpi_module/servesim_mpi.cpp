// libservesim_mpi.so: the MPI calls of mpi_split.cpp behind the C table of mpi_module_api.hpp,
// the only code that links Open MPI (see that header for why it is a module).
#include <mpi.h>

#include "sim/dist/mpi_module_api.hpp"

namespace {

int init(int* rank, int* size) {
  int provided = 0;
  // FUNNELED: only servesim's main thread calls MPI (the exchange runs after the parallel part).
  if (const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS) return rc;
  if (const int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank); rc != MPI_SUCCESS) return rc;
  return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int allgather_int(int mine, int* all) { return MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD); }

int allgatherv_bytes(const void* mine, int length, void* all, const int* lengths, const int* offsets) {
  return MPI_Allgatherv(mine, length, MPI_BYTE, all, lengths, offsets, MPI_BYTE, MPI_COMM_WORLD);
}

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

constexpr ServesimMpiApi kApi{kServesimMpiAbiVersion, init, allgather_int, allgatherv_bytes, finalize};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ServesimMpiApi* servesim_mpi_api() { return &kApi; }
