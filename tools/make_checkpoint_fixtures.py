#!/usr/bin/python3
"""Writes tests/fixtures/checkpoints/: real PyTorch checkpoint files and numpy pickles for the
checkpoint converter (mcdl_convert) and unpickler tests.

Run by hand with Debian's python3-torch (1.13), after tools/make_vit_fixtures.py:
    /usr/bin/python3 tools/make_checkpoint_fixtures.py
`make test` only reads the files it writes.

Files:
  vit_fixture.pth           the backbone of tests/fixtures/vit/weights.safetensors (32x32, patch 8,
                            dim 48, depth 2, 3 heads), torch.save(model.state_dict()) in the zip
                            format: an OrderedDict with _metadata, entries under "vit_fixture/".
  tiny_expected.safetensors a tiny DINO ViT (img 8, patch 4, chans 3, dim 8, depth 2, heads 2),
                            random weights, DINO names: what every tiny_* file converts to.
  tiny_legacy.pth           its state dict in the legacy format (_use_new_zipfile_serialization=False),
                            blocks.0.mlp.fc1.weight stored transposed (non-contiguous strides).
  tiny_full_checkpoint.pth  a DINO full checkpoint: {"student": module.backbone.* / module.head.*
                            (values + 1), "teacher": backbone.* / head.*, "optimizer", "epoch",
                            "args": argparse.Namespace, "dino_loss"}; the teacher is the expected one.
  tiny_hf.bin               Hugging Face ViTModel names, query/key/value as views into one storage
                            (storage offsets), plus pooler.dense.*.
  tiny_f16.pth              the state dict in float16 (zip).
  numpy_py2.pkl             a CIFAR-style batch as Python 2's cPickle writes it (protocol 2,
                            BINSTRING keys and data), hand-assembled below and checked by loading
                            it with pickle.load(encoding='bytes') and encoding='latin1'.
  numpy_proto2.pkl          Python 3, protocol 2 (bytes as _codecs.encode): {b'data': u8 [2, 5],
                            'labels': [...], 'f64': float64 [2, 3] Fortran order, 'i64': int64 [3]}.
  numpy_proto4.pkl          the same with protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL, BINBYTES).
"""
import argparse
import collections
import io
import json
import os
import pickle
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_vit_fixtures as vit  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
OUT = os.path.join(ROOT, "checkpoints")


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": np.float32, "F64": np.float64, "I64": np.int64}[info["dtype"]]
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"]).copy()
    return out


def fixture_backbone():
    weights = read_safetensors(os.path.join(ROOT, "vit", "weights.safetensors"))
    model = vit.VisionTransformer(vit.IMG, vit.PATCH, vit.CHANS, vit.DIM, vit.DEPTH, vit.HEADS)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items() if not k.startswith("head.")})
    return model


def tiny_backbone():
    gen = torch.Generator().manual_seed(7)
    model = vit.VisionTransformer(8, 4, 3, 8, 2, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return model


def hf_state_dict(sd, depth, dim):
    """DINO names -> Hugging Face ViTModel names; query/key/value are views of the fused tensors."""
    hf = collections.OrderedDict()
    hf["embeddings.cls_token"] = sd["cls_token"]
    hf["embeddings.position_embeddings"] = sd["pos_embed"]
    hf["embeddings.patch_embeddings.projection.weight"] = sd["patch_embed.proj.weight"]
    hf["embeddings.patch_embeddings.projection.bias"] = sd["patch_embed.proj.bias"]
    for i in range(depth):
        b, l = f"blocks.{i}.", f"encoder.layer.{i}."
        for j, part in enumerate(("query", "key", "value")):
            for param in ("weight", "bias"):
                hf[f"{l}attention.attention.{part}.{param}"] = sd[f"{b}attn.qkv.{param}"][j * dim:(j + 1) * dim]
        for dino, name in (("attn.proj", "attention.output.dense"), ("norm1", "layernorm_before"),
                           ("norm2", "layernorm_after"), ("mlp.fc1", "intermediate.dense"),
                           ("mlp.fc2", "output.dense")):
            for param in ("weight", "bias"):
                hf[f"{l}{name}.{param}"] = sd[f"{b}{dino}.{param}"]
    hf["layernorm.weight"] = sd["norm.weight"]
    hf["layernorm.bias"] = sd["norm.bias"]
    hf["pooler.dense.weight"] = torch.ones(dim, dim)
    hf["pooler.dense.bias"] = torch.zeros(dim)
    return hf


# ---- a Python 2 cPickle protocol 2 stream, assembled opcode by opcode ----------------------------
class Py2Pickle:
    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo = 0

    def put(self):
        self.out += b"q" + bytes([self.memo])
        self.memo += 1

    def op(self, code, payload=b""):
        self.out += code + payload

    def str(self, s):  # Python 2 str: SHORT_BINSTRING / BINSTRING
        if len(s) < 256:
            self.op(b"U", bytes([len(s)]) + s)
        else:
            self.op(b"T", struct.pack("<i", len(s)) + s)
        self.put()

    def int(self, v):
        if 0 <= v < 256:
            self.op(b"K", bytes([v]))
        else:
            self.op(b"J", struct.pack("<i", v))

    def global_(self, module, name):
        self.op(b"c", module + b"\n" + name + b"\n")
        self.put()

    def array(self, a):
        self.global_(b"numpy.core.multiarray", b"_reconstruct")
        self.global_(b"numpy", b"ndarray")
        self.int(0)
        self.op(b"\x85")  # TUPLE1
        self.put()
        self.str(b"b")
        self.op(b"\x87")  # TUPLE3
        self.put()
        self.op(b"R")
        self.put()
        self.op(b"(")  # the state tuple
        self.int(1)
        for size in a.shape:
            self.int(size)
        self.op({1: b"\x85", 2: b"\x86", 3: b"\x87"}[a.ndim])
        self.put()
        self.global_(b"numpy", b"dtype")
        self.str(a.dtype.str[1:].encode())
        self.int(0)
        self.int(1)
        self.op(b"\x87")
        self.put()
        self.op(b"R")
        self.put()
        self.op(b"(")
        self.int(3)
        self.str(a.dtype.str[0].encode())
        self.op(b"NNN")
        self.op(b"J", struct.pack("<i", -1))
        self.op(b"J", struct.pack("<i", -1))
        self.int(0)
        self.op(b"t")
        self.put()
        self.op(b"b")  # BUILD the dtype
        self.op(b"\x89")  # NEWFALSE: C order
        self.str(a.tobytes())
        self.op(b"t")
        self.put()
        self.op(b"b")  # BUILD the array

    def cifar_batch(self, data, labels):
        self.op(b"}")
        self.put()
        self.op(b"(")
        self.str(b"batch_label")
        self.str(b"training batch 1 of 5")
        self.str(b"labels")
        self.op(b"]")
        self.put()
        self.op(b"(")
        for v in labels:
            self.int(v)
        self.op(b"e")
        self.str(b"data")
        self.array(data)
        self.op(b"u")
        self.op(b".")
        return bytes(self.out)


def write_numpy_pickles():
    data = (np.arange(2 * 12, dtype=np.int64).reshape(2, 12) * 37 % 256).astype(np.uint8)  # bytes >= 0x80 too
    labels = [6, 300]
    py2 = Py2Pickle().cifar_batch(data, labels)
    for encoding in ("bytes", "latin1"):
        got = pickle.loads(py2, encoding=encoding)
        key = (lambda k: k.encode()) if encoding == "bytes" else (lambda k: k)
        assert np.array_equal(got[key("data")], data) and got[key("data")].dtype == np.uint8, encoding
        assert got[key("labels")] == labels, encoding
    with open(os.path.join(OUT, "numpy_py2.pkl"), "wb") as f:
        f.write(py2)

    obj = {b"data": (np.arange(10).reshape(2, 5) * 29 % 256).astype(np.uint8), "labels": [3, -2, 70000],
           "f64": np.asfortranarray(np.array([[1.5, -2.0, 3.25], [4.0, 5.5, -6.75]])),
           "i64": np.array([-1, 2 ** 40, 7], dtype=np.int64)}
    for protocol in (2, 4):
        blob = pickle.dumps(obj, protocol=protocol)
        assert np.array_equal(pickle.loads(blob)["f64"], obj["f64"])
        with open(os.path.join(OUT, f"numpy_proto{protocol}.pkl"), "wb") as f:
            f.write(blob)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.save(fixture_backbone().state_dict(), os.path.join(OUT, "vit_fixture.pth"))

    tiny = tiny_backbone()
    sd = tiny.state_dict()
    vit.write_safetensors(os.path.join(OUT, "tiny_expected.safetensors"), {k: v.numpy() for k, v in sd.items()})

    legacy = collections.OrderedDict(sd)
    legacy["blocks.0.mlp.fc1.weight"] = sd["blocks.0.mlp.fc1.weight"].t().contiguous().t()
    assert not legacy["blocks.0.mlp.fc1.weight"].is_contiguous()
    torch.save(legacy, os.path.join(OUT, "tiny_legacy.pth"), _use_new_zipfile_serialization=False)

    teacher = collections.OrderedDict(("backbone." + k, v) for k, v in sd.items())
    teacher["head.mlp.0.weight"] = torch.ones(4, 8)
    teacher["head.last_layer.weight_g"] = torch.ones(16, 1)
    student = collections.OrderedDict(("module." + k, v + 1) for k, v in teacher.items())
    full = {"student": student, "teacher": teacher, "optimizer": {"state": {}, "param_groups": [{"lr": 0.1}]},
            "epoch": 100, "args": argparse.Namespace(arch="vit_tiny", patch_size=4, lr=0.0005),
            "dino_loss": {"center": torch.zeros(1, 16)}}
    torch.save(full, os.path.join(OUT, "tiny_full_checkpoint.pth"))

    torch.save(hf_state_dict(sd, 2, 8), os.path.join(OUT, "tiny_hf.bin"))
    torch.save(collections.OrderedDict((k, v.half()) for k, v in sd.items()), os.path.join(OUT, "tiny_f16.pth"))

    write_numpy_pickles()
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {OUT}: {len(os.listdir(OUT))} files, {total} bytes")


if __name__ == "__main__":
    main()
