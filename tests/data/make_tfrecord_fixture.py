#!/usr/bin/env python3
"""Writes the TFRecord fixtures that tests/io/tf_fixture_test.cc reads without TensorFlow.

Run once with TensorFlow (any 2.x from PyPI; made with tensorflow-cpu 2.21):
    python tests/data/make_tfrecord_fixture.py tests/data
Writes tf_fixture.tfrecord (uncompressed), tf_fixture.tfrecord.gz (GZIP), tf_fixture.tfrecord.zz
(ZLIB) and tf_fixture_expected.json: the values each record holds, which the C++ test checks.

Every record is a tf.train.Example with
  "label"    int64,  1 value            (fixed length)
  "weights"  float,  3 values           (fixed length)
  "name"     bytes,  1 value            (fixed length)
  "tags"     bytes,  0..2 values        (variable length)
  "ids"      int64,  0..3 values        (variable length)
  "scores"   float,  only in some records (missing from the others: var-len, or a default)
"""
import json
import os
import sys

import tensorflow as tf

RECORDS = [
    {"label": [7], "weights": [0.5, -1.25, 3.0], "name": [b"alpha"], "tags": [b"x", b"yy"],
     "ids": [1, 2, 3], "scores": [0.25]},
    {"label": [-3], "weights": [1e-3, 2.5e10, -0.0], "name": [b""], "tags": [],
     "ids": [9223372036854775807], "scores": []},
    {"label": [0], "weights": [1.0, 2.0, 3.0], "name": [b"\x00\xff\x01bin"], "tags": [b"only"],
     "ids": [], "scores": None},
    {"label": [123456789012], "weights": [-7.5, 0.125, 42.0], "name": [b"delta"],
     "tags": [b"a", b"b"], "ids": [-1, 0], "scores": [1.5, 2.5]},
]


def feature(kind, values):
    if kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


KINDS = {"label": "int64", "weights": "float", "name": "bytes", "tags": "bytes", "ids": "int64",
         "scores": "float"}


def example(rec):
    feats = {k: feature(KINDS[k], v) for k, v in rec.items() if v is not None}
    return tf.train.Example(features=tf.train.Features(feature=feats))


def main(out_dir):
    serialized = [example(r).SerializeToString() for r in RECORDS]
    for suffix, compression in (("", None), (".gz", "GZIP"), (".zz", "ZLIB")):
        path = os.path.join(out_dir, "tf_fixture.tfrecord" + suffix)
        options = tf.io.TFRecordOptions(compression_type=compression) if compression else None
        with tf.io.TFRecordWriter(path, options) as w:
            for s in serialized:
                w.write(s)
    # TensorFlow's own parse of the file: the expected values, from TF and not from RECORDS.
    spec = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "weights": tf.io.FixedLenFeature([3], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string),
        "tags": tf.io.VarLenFeature(tf.string),
        "ids": tf.io.VarLenFeature(tf.int64),
        "scores": tf.io.VarLenFeature(tf.float32),
    }
    ds = tf.data.TFRecordDataset(os.path.join(out_dir, "tf_fixture.tfrecord"))
    parsed = tf.io.parse_example(tf.stack(list(ds)), spec)
    expected = {
        "records": len(RECORDS),
        "serialized_hex": [s.hex() for s in serialized],
        "label": parsed["label"].numpy().tolist(),
        "weights": parsed["weights"].numpy().tolist(),
        "name_hex": [v.hex() for v in parsed["name"].numpy().tolist()],
    }
    for key in ("tags", "ids", "scores"):
        sp = parsed[key]
        values = sp.values.numpy().tolist()
        if key == "tags":
            values = [v.hex() for v in values]
        expected[key] = {"indices": sp.indices.numpy().tolist(), "values": values,
                         "dense_shape": sp.dense_shape.numpy().tolist()}
    with open(os.path.join(out_dir, "tf_fixture_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
