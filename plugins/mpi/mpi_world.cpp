// libmcdl_mpi.so: the engine's host collectives over MPI (engine/mpi_plugin_api.h), built against
// the system's MPI by `make mpi` and loaded by engine/collective.cpp only under an MPI launcher.
// Errors return to the caller (MPI_ERRORS_RETURN) with MPI's own message.
// The C interface only: MPI's deprecated C++ bindings do not compile cleanly under -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <vector>

#include "engine/mpi_plugin_api.h"

namespace {

MPI_Comm side = MPI_COMM_NULL;  // the side channel, where MPI gave full thread support

MPI_Comm communicator(int comm) { return comm == kMcdlMpiSideChannel ? side : MPI_COMM_WORLD; }

int report(int code, const char* what, char* error, size_t error_size) {
  if (code == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  std::snprintf(error, error_size, "%s: %s", what, text);
  return 1;
}

int init(int* rank, int* size, int* side_channel, char* error, size_t error_size) {
  int provided = 0;
  // The step's thread calls MPI on the world; with full thread support a checkpoint's thread may
  // call it on the side channel at the same time.
  if (int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided); code != MPI_SUCCESS)
    return report(code, "MPI_Init_thread", error, error_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  *side_channel = 0;
  if (provided == MPI_THREAD_MULTIPLE) {
    if (int code = MPI_Comm_dup(MPI_COMM_WORLD, &side); code != MPI_SUCCESS)
      return report(code, "MPI_Comm_dup", error, error_size);
    MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
    *side_channel = 1;
  }
  return 0;
}

// MPI's per-rank counts and offsets (ints) for byte counts, or false with a message.
bool int_counts(const char* what, const size_t* counts, std::vector<int>& count, std::vector<int>& offset, char* error,
                size_t error_size) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  count.assign(static_cast<size_t>(size), 0);
  offset.assign(static_cast<size_t>(size), 0);
  size_t total = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] > INT_MAX || total > INT_MAX) {
      std::snprintf(error, error_size, "%s of %zu bytes from rank %d: more than MPI's int counts hold", what,
                    counts[r], r);
      return false;
    }
    count[static_cast<size_t>(r)] = static_cast<int>(counts[r]);
    offset[static_cast<size_t>(r)] = static_cast<int>(total);
    total += counts[r];
  }
  return true;
}

int all_gather(int comm, const void* send, size_t send_bytes, void* receive, const size_t* counts, char* error,
               size_t error_size) {
  std::vector<int> count, offset;
  if (!int_counts("all-gather", counts, count, offset, error, error_size)) return 1;
  return report(MPI_Allgatherv(send, static_cast<int>(send_bytes), MPI_BYTE, receive, count.data(), offset.data(),
                               MPI_BYTE, communicator(comm)),
                "MPI_Allgatherv", error, error_size);
}

int gather(int comm, const void* send, size_t send_bytes, void* receive, const size_t* counts, int root, char* error,
           size_t error_size) {
  std::vector<int> count, offset;
  if (!int_counts("gather", counts, count, offset, error, error_size)) return 1;
  return report(MPI_Gatherv(send, static_cast<int>(send_bytes), MPI_BYTE, receive, count.data(), offset.data(),
                            MPI_BYTE, root, communicator(comm)),
                "MPI_Gatherv", error, error_size);
}

int broadcast(int comm, void* data, size_t bytes, int root, char* error, size_t error_size) {
  if (bytes > INT_MAX) {
    std::snprintf(error, error_size, "broadcast of %zu bytes: more than MPI's int counts hold", bytes);
    return 1;
  }
  return report(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, communicator(comm)), "MPI_Bcast", error,
                error_size);
}

int barrier(int comm, char* error, size_t error_size) {
  return report(MPI_Barrier(communicator(comm)), "MPI_Barrier", error, error_size);
}

void abort_world(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (side != MPI_COMM_NULL) MPI_Comm_free(&side);
  MPI_Finalize();
}

const McdlMpiApi api{kMcdlMpiApiVersion, init, all_gather, gather, broadcast, barrier, abort_world, finalize};

}  // namespace

extern "C" const McdlMpiApi* mcdl_mpi_api() { return &api; }
