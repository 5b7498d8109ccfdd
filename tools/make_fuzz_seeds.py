#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer targets (tests/fuzz/corpus/<target>/), Python's
standard library only: small valid inputs of each format plus slightly broken variants, and small
copies of tests/fixtures. Run from the repository root; the output is committed."""
import gzip
import io
import os
import pickle
import shutil
import struct
import zipfile
import zlib

OUT = "tests/fuzz/corpus"


def put(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


def copy(target, name, fixture):
    with open(fixture, "rb") as f:
        put(target, name, f.read())


def broken(data):
    """A truncated copy and one with a byte flipped in the middle."""
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    return data[: len(data) * 2 // 3], bytes(flipped)


# ---- zip ----
def zip_bytes(entries, **kwargs):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = kwargs.get("method", zipfile.ZIP_STORED)
            with z.open(info, "w", force_zip64=kwargs.get("zip64", False)) as f:
                f.write(data)
    return buf.getvalue()


plain = zip_bytes([("archive/data.pkl", b"\x80\x02}q\x00."), ("archive/data/0", bytes(range(16)))])
put("zip", "stored.zip", plain)
put("zip", "zip64.zip", zip_bytes([("a/x", b"hello"), ("a/y", b"")], zip64=True))
put("zip", "deflated.zip", zip_bytes([("a/x", b"compressed " * 8)], method=zipfile.ZIP_DEFLATED))
for i, b in enumerate(broken(plain)):
    put("zip", f"broken{i}.zip", b)

# ---- pickle (+ numpy arrays) ----
value = {b"batch_label": b"x", b"labels": [1, 2, 3], "name": "s", "f": 1.5, "big": 1 << 70, "t": (None, True, False)}
for protocol in (2, 3, 4, 5):
    put("pickle", f"dict_p{protocol}.pkl", pickle.dumps(value, protocol=protocol))
put("pickle", "nested.pkl", pickle.dumps([[1, [2, [3, {}]]], ()], protocol=2))
for name in ("numpy_proto2.pkl", "numpy_proto4.pkl", "numpy_py2.pkl"):
    copy("pickle", name, "tests/fixtures/checkpoints/" + name)
with open("tests/fixtures/checkpoints/numpy_proto2.pkl", "rb") as f:
    for i, b in enumerate(broken(f.read())):
        put("pickle", f"numpy_broken{i}.pkl", b)

# ---- torch checkpoints (the small fixtures: zip with f16, legacy) ----
for name in ("tiny_f16.pth", "tiny_legacy.pth"):
    copy("torch_checkpoint", name, "tests/fixtures/checkpoints/" + name)
with open("tests/fixtures/checkpoints/tiny_legacy.pth", "rb") as f:
    legacy = f.read()
put("torch_checkpoint", "legacy_truncated.pth", legacy[:3000])

# ---- safetensors ----
def safetensors(header, data):
    text = header.encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


for name in ("numpy_f32.safetensors", "numpy_mixed.safetensors"):
    copy("safetensors", name, "tests/fixtures/safetensors/" + name)
good = safetensors('{"__metadata__":{"k":"v"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},'
                   '"b":{"dtype":"BOOL","shape":[1,2],"data_offsets":[4,6]}}', b"\x00\x3c\x00\xc0\x01\x00")
put("safetensors", "f16_bool.safetensors", good)
put("safetensors", "overlap.safetensors",
    safetensors('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],'
                '"data_offsets":[1,2]}}', b"ab"))
for i, b in enumerate(broken(good)):
    put("safetensors", f"broken{i}.safetensors", b)

# ---- npy ----
def npy(descr, shape, data, version=1, fortran=False):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    prefix = 6 + 2 + (2 if version == 1 else 4)
    pad = 64 - (prefix + len(d) + 1) % 64
    header = (d + " " * pad + "\n").encode()
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + data


put("npy", "f4_2x3.npy", npy("<f4", "(2, 3)", struct.pack("<6f", *range(6))))
put("npy", "i8_3.npy", npy("<i8", "(3,)", struct.pack("<3q", 1, -2, 3)))
put("npy", "scalar.npy", npy("<f4", "()", struct.pack("<f", 1.0)))
put("npy", "v2.npy", npy("<f4", "(1, 1)", struct.pack("<f", 2.0), version=2))
put("npy", "fortran.npy", npy("<f4", "(1,)", struct.pack("<f", 2.0), fortran=True))
put("npy", "wrong_size.npy", npy("<f4", "(2, 2)", struct.pack("<f", 2.0)))

# ---- MATLAB level 5 (as tests/data/mat_writer.h writes it) ----
def tag(t, data, padded=True):
    out = struct.pack("<II", t, len(data)) + data
    if padded:
        out += b"\0" * ((8 - len(data) % 8) % 8)
    return out


def matrix(name, cls, dims, body):
    content = tag(6, struct.pack("<II", cls, 0)) + tag(5, struct.pack("<%di" % len(dims), *dims))
    return tag(14, content + tag(1, name.encode()) + body)


doubles = matrix("x", 6, [1, 3], tag(9, struct.pack("<3d", 1.0, 2.5, -3.0)))
text = matrix("s", 4, [1, 2], tag(4, "hi".encode("utf-16-le")))
cell = matrix("c", 1, [1, 2], matrix("", 6, [1, 1], tag(9, struct.pack("<d", 7.0))) + matrix("", 4, [1, 1], tag(4, b"a\0")))
names = b"id\0\0\0\0\0\0name\0\0\0\0"
struct_array = matrix("annotations", 2, [1, 1], tag(5, struct.pack("<i", 8)) + tag(1, names) +
                      matrix("", 6, [1, 1], tag(2, b"\x05")) + matrix("", 4, [1, 3], tag(16, b"car")))
header = b"MATLAB 5.0 MAT-file, written by make_fuzz_seeds.py".ljust(124, b" ") + b"\x00\x01IM"
mat = header + doubles + text + cell
put("mat", "plain.mat", mat)
compressed = zlib.compress(struct_array)
put("mat", "compressed.mat", header + struct.pack("<II", 15, len(compressed)) + compressed)
for i, b in enumerate(broken(mat)):
    put("mat", f"broken{i}.mat", b)

# ---- CIFAR (first byte: bit 0 python, bit 1 CIFAR-100) ----
record = bytes([3]) + bytes(i % 256 for i in range(3072))
put("cifar", "binary10.bin", b"\x00" + record * 2)
put("cifar", "binary100.bin", b"\x02" + bytes([1]) + record)
put("cifar", "binary10_truncated.bin", b"\x00" + record[:1000])
copy("cifar", "python10.tmp", "tests/fixtures/cifar/cifar-10-batches-py/data_batch_1")
copy("cifar", "python100.tmp", "tests/fixtures/cifar/cifar-100-python/train")
for name, flag in (("python10", 1), ("python100", 3)):
    with open(os.path.join(OUT, "cifar", name + ".tmp"), "rb") as f:
        data = f.read()
    os.remove(os.path.join(OUT, "cifar", name + ".tmp"))
    put("cifar", name + ".pkl", bytes([flag]) + data)

# ---- Fashion-MNIST (flag byte, u16 label length, labels, images) ----
labels = struct.pack(">II", 0x801, 2) + bytes([3, 9])
images = struct.pack(">IIII", 0x803, 2, 3, 3) + bytes(range(18))


def fmnist(flags, labels, images):
    return bytes([flags]) + struct.pack("<H", len(labels)) + labels + images


put("fashion_mnist", "plain.idx", fmnist(0, labels, images))
put("fashion_mnist", "gzip.idx", fmnist(3, gzip.compress(labels, mtime=0), gzip.compress(images, mtime=0)))
put("fashion_mnist", "mismatch.idx", fmnist(0, labels, struct.pack(">IIII", 0x803, 1, 3, 3) + bytes(9)))

# ---- CSV (mcdl_eval's predictions) ----
put("csv", "predictions.csv", b"index,label,prediction,is_old\n0,1,1,1\n1,2,0,0\n")
put("csv", "quoted.csv", b'\xef\xbb\xbf"index" , "la""bel",prediction\r\n 3, "7",x\r\n\r\n')
put("csv", "bad.csv", b'a,b\n1\n"unterminated\n')

# ---- images (first byte: bit 0 grayscale output, else RGB) ----
for name in ("resize_rgb_1x1.png", "gray.png", "center_gray_4x7.png"):
    copy("decode", name, "tests/fixtures/augment/" + name)
    with open(os.path.join(OUT, "decode", name), "rb") as f:
        data = f.read()
    put("decode", name, b"\x00" + data)
    put("decode", "L_" + name, b"\x01" + data)
bmp_pixels = b"\x00\x00\xff\x00\xff\x00\x00\x00"  # 2x1, 24-bit rows padded to 4 bytes
bmp = b"BM" + struct.pack("<IHHI", 54 + len(bmp_pixels), 0, 0, 54) + \
    struct.pack("<IiiHHIIiiII", 40, 2, 1, 1, 24, 0, len(bmp_pixels), 2835, 2835, 0, 0) + bmp_pixels
put("decode", "tiny.bmp", b"\x00" + bmp)
put("decode", "tiny.pgm", b"\x01" + b"P5\n2 2\n255\n\x00\x40\x80\xff")
put("decode", "tiny.ppm", b"\x00" + b"P6\n1 1\n255\n\x10\x20\x30")
put("decode", "tiny.gif", b"\x00" + bytes.fromhex(
    "47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b"))
put("decode", "tiny.tga", b"\x00" + struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, 1, 1, 24, 0) + b"\x01\x02\x03")
jpeg = "/root/.pyenv/versions/3.11.7/lib/python3.11/test/imghdrdata/python.jpg"
if os.path.exists(jpeg):
    with open(jpeg, "rb") as f:
        data = f.read()
    put("decode", "python.jpg", b"\x00" + data)
    put("decode", "python_truncated.jpg", b"\x00" + data[: len(data) // 2])
