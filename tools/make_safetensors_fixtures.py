#!/usr/bin/env python3
"""Writes the safetensors test fixtures in tests/fixtures/safetensors/.

The files are laid out byte for byte as the reference library (huggingface/safetensors, Rust
core) writes them, using only numpy + json + struct so that no extra package is needed:
  - u64 little-endian header length, then compact JSON (serde_json style: no spaces,
    non-ASCII kept as UTF-8), "__metadata__" first, each entry as dtype, shape, data_offsets;
  - tensors ordered by dtype (largest alignment first, in the reference's Dtype enum order),
    then by name, their data contiguous in that order;
  - the header padded with spaces to a multiple of 8 bytes.

Run from anywhere: /usr/bin/python3 tools/make_safetensors_fixtures.py
"""
import json
import os
import struct

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "safetensors")

# The reference's Dtype enum order for the dtypes used here; writing sorts by it, descending.
DTYPE_ORDER = ["BOOL", "U8", "F16", "BF16", "I32", "F32", "F64", "I64"]


def bf16_bits(values):
    """bfloat16 bit patterns of values that bf16 represents exactly (truncating float32)."""
    bits = np.asarray(values, dtype="<f4").view("<u4") >> 16
    return bits.astype("<u2")


def write_safetensors(path, tensors, metadata):
    """tensors: {name: (dtype string, shape, little-endian numpy array)}."""
    order = sorted(tensors, key=lambda name: (-DTYPE_ORDER.index(tensors[name][0]), name))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    data = b""
    for name in order:
        dtype, shape, array = tensors[name]
        raw = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)

    # Every dtype the engine reads, in the reference's (dtype, name) order, none in name order.
    half = [1.0, -2.5, 65504.0, 2.0**-14, 2.0**-24, np.inf, -0.0, np.nan]
    mixed = {
        "weight": ("F32", (2, 3), np.array([0.5, -1.25, 3.0, 1e-3, -0.0, 1234.5], dtype="<f4")),
        "bias": ("F64", (3,), np.array([1.0 / 3.0, -2.0, 1e300], dtype="<f8")),
        "half": ("F16", (2, 4), np.array(half, dtype="<f2")),
        "brain": ("BF16", (3,), bf16_bits([1.0, -3.5, 0.15625])),
        "steps": ("I64", (), np.array(-7, dtype="<i8")),
        "ids": ("I32", (4,), np.array([0, -1, 2**31 - 1, -(2**31)], dtype="<i4")),
        "pixels": ("U8", (2, 2), np.array([0, 1, 128, 255], dtype="u1")),
        "mask": ("BOOL", (3,), np.array([True, False, True], dtype="?")),
        "nothing": ("F32", (0, 3), np.zeros((0, 3), dtype="<f4")),
    }
    write_safetensors(os.path.join(OUT_DIR, "numpy_mixed.safetensors"), mixed,
                      {"format": "pt", "producer": "numpy ✓"})

    # One dtype, so the reference's order is the name order the engine writes: save_safetensors
    # must reproduce this file byte for byte. (One metadata key: the reference's metadata map
    # has no defined key order.)
    same = {
        "b.weight": ("F32", (2, 2), np.array([1.0, 2.0, 3.0, 4.0], dtype="<f4")),
        "a.bias": ("F32", (2,), np.array([-0.5, 0.25], dtype="<f4")),
    }
    write_safetensors(os.path.join(OUT_DIR, "numpy_f32.safetensors"), same, {"format": "pt"})


if __name__ == "__main__":
    main()
