// The C interface between the engine (engine/collective.cpp) and the MPI plugin
// (plugins/mpi/mpi_world.cpp, built as libmcdl_mpi.so against the system's MPI). The engine
// loads the plugin only when an MPI launcher started the process, so a build without MPI, and
// every one-process run, needs no MPI library at run time. Each call returns 0, or another value
// with a message in `error` (at most error_size bytes, NUL-terminated).
#pragma once
#include <cstddef>

extern "C" {

struct McdlMpiApi {
  int version;  // kMcdlMpiApiVersion of the plugin's build
  // Starts MPI. Where MPI gives full thread support, also makes a second communicator of the same
  // ranks, the side channel, whose calls may run on another thread at the same time as the
  // world's, and sets *side_channel to 1 (else 0).
  int (*init)(int* rank, int* size, int* side_channel, char* error, size_t error_size);
  // Each collective runs on `comm`: kMcdlMpiWorld or kMcdlMpiSideChannel.
  // receive = the ranks' send buffers in rank order; counts[r] bytes come from rank r.
  int (*all_gather)(int comm, const void* send, size_t send_bytes, void* receive, const size_t* counts, char* error,
                    size_t error_size);
  // The same into `receive` on rank `root` only.
  int (*gather)(int comm, const void* send, size_t send_bytes, void* receive, const size_t* counts, int root,
                char* error, size_t error_size);
  int (*broadcast)(int comm, void* data, size_t bytes, int root, char* error, size_t error_size);
  int (*barrier)(int comm, char* error, size_t error_size);
  void (*abort)(int code);  // ends every process of the world
  void (*finalize)();
};

// The plugin's one exported symbol.
const McdlMpiApi* mcdl_mpi_api();
}

inline constexpr int kMcdlMpiApiVersion = 3;
inline constexpr int kMcdlMpiWorld = 0;
inline constexpr int kMcdlMpiSideChannel = 1;
inline constexpr const char* kMcdlMpiApiSymbol = "mcdl_mpi_api";
