#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/): a handful of
small valid inputs each. Run from anywhere: python3 tests/fuzz/make_corpus.py

The cluster runtime's targets (placed_graph, raw_message) take real wire bytes, which the test
suite writes: PF_WRITE_FUZZ_SEEDS=tests/fuzz/corpus build/tests/pf_tests \
  "A placed partition*","Raw messages*"
"""
import gzip
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# device_name: one name, or two joined by a NUL byte.
for i, text in enumerate([
        "/job:localhost/replica:0/task:0/device:CPU:0", "/gpu:1", "/CPU:*", "/device:GPU:*",
        "/job:*/device:*:3", "/job:worker_1/task:2", "/replica:7/device:XLA_CPU",
        "/job:ps\0/job:worker/cpu:1", "/gpu:0\0/device:GPU:1", ""]):
    put("device_name", f"seed{i}", text)


# safetensors: 8-byte little-endian header length, JSON header, data.
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + data


put("safetensors", "scalar", safetensors({"w": ("F32", [], struct.pack("<f", 1.5))}))
put("safetensors", "two", safetensors({
    "dense/w": ("F32", [2, 3], struct.pack("<6f", *range(6))),
    "dense/b": ("I64", [2], struct.pack("<2q", -1, 7))}))
put("safetensors", "dtypes", safetensors({
    "d": ("F64", [1], struct.pack("<d", 2.0)), "i": ("I32", [2, 1], struct.pack("<2i", 3, 4)),
    "h": ("F16", [2], b"\x00\x3c\x00\x40"), "bf": ("BF16", [1], b"\x80\x3f"),
    "b": ("BOOL", [3], b"\x01\x00\x01")}))
put("safetensors", "empty", safetensors({"e": ("F32", [0, 4], b"")}))
put("safetensors", "metadata", safetensors({"x": ("F32", [1], b"\0\0\0\0")},
                                           metadata={"format": "pt"}))


# idx: a mode byte (even: one file through ReadIdx; odd: two bytes of split position, then an
# images file and a labels file for LoadMnist).
def idx(dims, payload):
    header = struct.pack(">I", 0x800 | len(dims)) + b"".join(struct.pack(">I", d) for d in dims)
    return header + payload


images = idx([3, 2, 2], bytes(range(0, 240, 20)))
labels = idx([3], bytes([1, 9, 0]))
put("idx", "images", b"\x00" + images)
put("idx", "labels", b"\x00" + labels)
put("idx", "images_gz", b"\x00" + gzip.compress(images, mtime=0))
put("idx", "pair", b"\x03" + struct.pack(">H", len(images)) + images + labels)
put("idx", "pair_gz", b"\x05" + struct.pack(">H", len(images)) + images + labels)

# graph: programs for graph_fuzz.cc's reader. Each step: a device byte (high bit: /cpu:0 or
# /cpu:1 by the low bit), an op byte (below 4 for the first step, below 40 after), operands.
F_CONST, I_CONST, PLACEHOLDER, VARIABLE = 0, 1, 2, 3
ADD, MATMUL, SLICE, CONCAT, REDUCE, RELU, SOFTMAX, TRANSPOSE = 4, 9, 11, 12, 13, 14, 15, 17
SPLIT, SPARSE_XENT = 26, 37


def step(op, *operands, device=0):
    return bytes([device, op, *operands])


def dims(*d):
    return bytes([len(d), *d])


put("graph", "mlp", b"".join([
    step(PLACEHOLDER, *dims(2, 3), 1, 1, 0, 1, *range(1, 7)),  # x: [?, 3] fed [2, 3]
    step(VARIABLE, *dims(3, 2), 3),                            # v: [3, 2]
    step(MATMUL, 0, 1, 0, 0),                                  # x @ v
    step(RELU, 2),
    step(SOFTMAX, 3),
    step(REDUCE, 4, 0, 0, 0)]))
put("graph", "two_devices", b"".join([
    step(F_CONST, *dims(2, 2), 8, 16, 24, 32),
    step(ADD, 0, 0, device=0x81),
    step(TRANSPOSE, 1, 2, 1, 0, device=0x80),
    step(CONCAT, 2, 0, 1, 3),
    step(SLICE, 3, 2, 0, 1, 2, 1, 4)]))
put("graph", "unknown_rank", b"".join([
    step(PLACEHOLDER, *dims(3, 2), 0, 1, *range(6)),           # unknown rank, fed [3, 2]
    step(SPLIT, 0, 3, 1),
    step(REDUCE, 1, 1, 1, 0, 1)]))
put("graph", "xent", b"".join([
    step(F_CONST, *dims(2, 3), *range(6)),
    step(I_CONST, *dims(2), 1, 2),
    step(SPARSE_XENT, 0, 1)]))
rng = random.Random(20)
for i in range(3):
    put("graph", f"random{i}", bytes(rng.randrange(256) for _ in range(48)))

# tfrecord: mode byte (bits 0-1 compression none/ZLIB/GZIP, bit 2 skip_corrupt, bit 3 parse as
# tf.Example), then the file: TensorFlow's own fixture (tests/data/make_tfrecord_fixture.py).
DATA = os.path.join(HERE, "..", "data")
for name, compression in (("tf_fixture.tfrecord", 0), ("tf_fixture.tfrecord.zz", 1),
                          ("tf_fixture.tfrecord.gz", 2)):
    with open(os.path.join(DATA, name), "rb") as f:
        body = f.read()
    for extra, what in ((0, "frames"), (8, "parsed"), (12, "parsed_skip")):
        put("tfrecord", f"{name.replace('.', '_')}_{what}", bytes([compression | extra]) + body)
