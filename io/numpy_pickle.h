// numpy arrays inside pickles (CIFAR's python batches, any pickled ndarray), read with the
// safe unpickler of io/pickle.h.
//
// numpy pickles an array as
//   numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b'b')      (REDUCE)
//   BUILD (1, shape, dtype, is_fortran, data)
// with dtype = numpy.dtype('u1', False, True) + BUILD (3, '|', None, ...). Under Python 2 the
// strings are BINSTRING; Python 3 with protocol 2 writes bytes as _codecs.encode(str, 'latin1')
// (and b'' as bytes()); protocols >= 3 use BINBYTES. numpy >= 2 names the module numpy._core.
#pragma once
#include "engine/tensor.h"
#include "io/pickle.h"

namespace mcdl {

// The globals an ndarray pickle needs: _reconstruct (numpy.core and numpy._core),
// numpy.ndarray, numpy.dtype, _codecs.encode and bytes (Python 3, protocol 2). Merge them into
// a reader's own allowlist.
PickleGlobals numpy_array_globals();

// The array as a new contiguous CPU tensor (C order, also from a Fortran-ordered array).
// Element types: uint8 and bool -> u8; int8 / int16 / uint16 / int32 -> i32; uint32 / int64
// -> i64; float16 -> f32; float32; float64. Byte order '<', '|' or '='; '>' is refused.
// Errors name what was found ("numpy array: dtype 'c16' is not supported", "numpy array:
// data holds 10 bytes but uint8[3, 4] needs 12").
Tensor numpy_array_from_pickle(const PickleValue& array);

}  // namespace mcdl
