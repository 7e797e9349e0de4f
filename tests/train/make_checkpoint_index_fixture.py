#!/usr/bin/env python3
"""Writes the "checkpoint" index fixtures that tests/train/checkpoint_index_test.cc reads.

TensorFlow writes the index with text_format.MessageToString(CheckpointState)
(tensorflow/python/checkpoint/checkpoint_management.py, update_checkpoint_state_internal).
This does the same with the protobuf package alone (made with protobuf 7.36), the message built
from checkpoint_state.proto's fields, so it runs without TensorFlow:
    python tests/train/make_checkpoint_index_fixture.py tests/train
Writes
  tf_checkpoint_index.txt          what tf.compat.v1.train.Saver writes in TF 2.x (timestamps too)
  tf_checkpoint_escapes.txt        awkward names, as_utf8=False (protobuf 3's CEscape: octal bytes)
  tf_checkpoint_escapes_utf8.txt   the same names, as_utf8 default (newer protobuf: UTF-8 as is)
"""
import os
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format


def checkpoint_state_class():
    fd = descriptor_pb2.FileDescriptorProto(name="checkpoint_state.proto", package="tensorflow",
                                            syntax="proto3")
    m = fd.message_type.add(name="CheckpointState")
    f = descriptor_pb2.FieldDescriptorProto
    m.field.add(name="model_checkpoint_path", number=1, type=f.TYPE_STRING,
                label=f.LABEL_OPTIONAL)
    m.field.add(name="all_model_checkpoint_paths", number=2, type=f.TYPE_STRING,
                label=f.LABEL_REPEATED)
    m.field.add(name="all_model_checkpoint_timestamps", number=3, type=f.TYPE_DOUBLE,
                label=f.LABEL_REPEATED)
    m.field.add(name="last_preserved_timestamp", number=4, type=f.TYPE_DOUBLE,
                label=f.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tensorflow.CheckpointState"))


def main(out_dir):
    state = checkpoint_state_class()
    paths = ["model-2.safetensors", "model-3.safetensors"]
    tf_written = state(model_checkpoint_path=paths[-1], all_model_checkpoint_paths=paths,
                       all_model_checkpoint_timestamps=[1764200000.25, 1764200060.5],
                       last_preserved_timestamp=1764199990.125)
    odd = ["plain-1.safetensors", "it's \"odd\"\\ \t\x01\x7f \u00f1.safetensors"]
    escapes = state(model_checkpoint_path=odd[-1], all_model_checkpoint_paths=odd)
    outputs = {
        "tf_checkpoint_index.txt": text_format.MessageToString(tf_written),
        "tf_checkpoint_escapes.txt": text_format.MessageToString(escapes, as_utf8=False),
        "tf_checkpoint_escapes_utf8.txt": text_format.MessageToString(escapes),
    }
    for name, text in outputs.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(text.encode("utf-8"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
