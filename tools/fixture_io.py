"""Writing test fixtures as safetensors from numpy arrays (the fixture scripts in tools/ share it).

Tensors are written in name order; the header is compact JSON, padded with spaces to a multiple
of 8 bytes, with the optional string metadata last, as the safetensors reference writes it.
"""
import json
import struct

import numpy as np

DTYPE_NAMES = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64", np.dtype("<i8"): "I64",
               np.dtype("<i4"): "I32", np.dtype("u1"): "U8"}


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: numpy array} (little-endian f32/f64/i64/i32 or u8); metadata: {str: str}."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        array = np.array(tensors[name], order="C")  # keeps 0-d arrays 0-d (ascontiguousarray would not)
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        raw = array.tobytes()
        header[name] = {"dtype": DTYPE_NAMES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
