// Kernels that exercise the emulator's WMMA (kernels/emu/wmma.h), with one host launcher each; the
// tests in tests/emu/test_wmma.cpp run them. Plain CUDA over kernels/cuda/wmma.h, as a kernel of
// kernels/cuda/ would use it.
#include "kernels/cuda/wmma.h"

namespace mcdl::emu_selftest {

namespace wmma = nvcuda::wmma;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// d = a·b + c for one 16×16×16 tile per warp (warp w at a + w·tile_stride and so on), with a and b
// read in the layouts LayoutA and LayoutB, c read and d written in `layout`. Each warp then
// doubles its d element by element and stores it to d2.
template <class LayoutA, class LayoutB>
__global__ void tile_product(const bf16* a, unsigned lda, const bf16* b, unsigned ldb, const float* c, float* d,
                             float* d2, unsigned ldc, bool column_major, int tile_stride) {
  const int offset = static_cast<int>(threadIdx.x / 32) * tile_stride;
  const wmma::layout_t layout = column_major ? wmma::mem_col_major : wmma::mem_row_major;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, LayoutB> fb;
  Accumulator acc;
  wmma::load_matrix_sync(fa, cuda::as_wmma(a + offset), lda);
  wmma::load_matrix_sync(fb, cuda::as_wmma(b + offset), ldb);
  wmma::load_matrix_sync(acc, c + offset, ldc, layout);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d + offset, acc, ldc, layout);
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= 2.0f;
  wmma::store_matrix_sync(d2 + offset, acc, ldc, layout);
}

// Loads the 16×16 matrix `positions` (element (r, c) = 16·r + c) into an accumulator and into
// row-major operand fragments, and writes what each lane holds: out[3·(8·lane + i) + f] is
// element i of lane `lane` of fragment f (matrix_a, matrix_b, accumulator).
__global__ void fragment_contents(const float* positions, const bf16* positions16, float* out) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
  Accumulator acc;
  wmma::load_matrix_sync(fa, cuda::as_wmma(positions16), 16);
  wmma::load_matrix_sync(fb, cuda::as_wmma(positions16), 16);
  wmma::load_matrix_sync(acc, positions, 16, wmma::mem_row_major);
  float* o = out + 3 * 8 * threadIdx.x;
  for (int i = 0; i < 8; ++i) {
    bf16 ea, eb;
    std::memcpy(&ea.bits, &fa.x[i], sizeof ea.bits);
    std::memcpy(&eb.bits, &fb.x[i], sizeof eb.bits);
    o[3 * i] = static_cast<float>(ea);
    o[3 * i + 1] = static_cast<float>(eb);
    o[3 * i + 2] = acc.x[i];
  }
}

// The ways to misuse a WMMA call, one per `fault`: 0 a pointer 4 bytes past 32-byte alignment,
// 1 ldm 12 for bf16 (24 bytes), 2 ldm 6 for float, 3 a pointer that differs between lanes,
// 4 lanes 16-31 exited before the call; launched with 48 threads: 5 (the last warp has 16 lanes).
__global__ void misuse(const bf16* a, float* c, int fault) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  Accumulator acc;
  wmma::fill_fragment(acc, 0.0f);
  const int lane = threadIdx.x % 32;
  switch (fault) {
    case 0:
      wmma::store_matrix_sync(c + 1, acc, 16, wmma::mem_row_major);
      break;
    case 1:
      wmma::load_matrix_sync(fa, cuda::as_wmma(a), 12);
      break;
    case 2:
      wmma::store_matrix_sync(c, acc, 6, wmma::mem_row_major);
      break;
    case 3:
      wmma::load_matrix_sync(fa, cuda::as_wmma(a + 16 * (lane % 2)), 16);
      break;
    case 4:
      if (lane >= 16) return;
      wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
      break;
    default:
      wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
  }
}

void launch_tile_product(const bf16* a, unsigned lda, bool a_column_major, const bf16* b, unsigned ldb,
                         bool b_column_major, const float* c, float* d, float* d2, unsigned ldc, bool c_column_major,
                         int warps, int tile_stride) {
  const auto run = [&](auto kernel) {
    cuda::launch(kernel, 1, 32 * warps, 0, nullptr, a, lda, b, ldb, c, d, d2, ldc, c_column_major, tile_stride);
  };
  if (a_column_major)
    b_column_major ? run(tile_product<wmma::col_major, wmma::col_major>)
                   : run(tile_product<wmma::col_major, wmma::row_major>);
  else
    b_column_major ? run(tile_product<wmma::row_major, wmma::col_major>)
                   : run(tile_product<wmma::row_major, wmma::row_major>);
}
void launch_fragment_contents(const float* positions, const bf16* positions16, float* out) {
  cuda::launch(fragment_contents, 1, 32, 0, nullptr, positions, positions16, out);
}
void launch_misuse(const bf16* a, float* c, int fault) {
  cuda::launch(misuse, 1, fault == 5 ? 48 : 32, 0, nullptr, a, c, fault);
}

}  // namespace mcdl::emu_selftest
