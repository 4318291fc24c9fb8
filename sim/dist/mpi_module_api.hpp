// The calls servesim makes into MPI, as a plain C table that the MPI module
// (sim/dist/mpi_module/, libservesim_mpi.so) exports and mpi_split.cpp loads with dlopen() only
// when a command is given --mpi. Linking Open MPI into servesim itself cost every process, MPI or
// not, ~3.4 ms and ~86 page faults at start-up loading its eight shared libraries.
#pragma once

extern "C" {

// Return codes are MPI's (MPI_SUCCESS is 0).
struct ServesimMpiApi {
  int abi_version;  // kServesimMpiAbiVersion of the module's build
  // MPI_Init_thread (MPI_THREAD_FUNNELED), then this process's rank and the world's size.
  int (*init)(int* rank, int* size);
  // MPI_Allgather of one int per rank into all[size].
  int (*allgather_int)(int mine, int* all);
  // MPI_Allgatherv of bytes: rank r's `lengths[r]` bytes land at all + offsets[r].
  int (*allgatherv_bytes)(const void* mine, int length, void* all, const int* lengths, const int* offsets);
  // MPI_Finalize unless MPI is finalized already.
  void (*finalize)();
};

// The module's one exported symbol.
const ServesimMpiApi* servesim_mpi_api();
}

inline constexpr int kServesimMpiAbiVersion = 1;
inline constexpr const char* kServesimMpiApiSymbol = "servesim_mpi_api";
