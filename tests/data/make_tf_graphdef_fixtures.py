#!/usr/bin/env python3
"""Writes the TensorFlow-made GraphDefs that tests/graph/tf_graphdef_import_test.cc imports.

Run once with TensorFlow (any 2.x from PyPI; made with tensorflow-cpu 2.21):
    python tests/data/make_tf_graphdef_fixtures.py tests/data/tf_graphdefs
Writes, into the folder:
  mlp_resource.pb  an MLP with a softmax loss, tf.compat.v1 resource variables (VarHandleOp,
                   ReadVariableOp, AssignVariableOp), AddV2, BiasAdd, reductions with an axes
                   input (Sum, Mean, Max, Min; keepdims on and off), IdentityN, StopGradient and
                   a NoOp (tf.group)
  mlp_ref.pb       the same model with reference variables (VariableV2, Assign, "<name>/read")
  convnet.pb       a small conv net: Conv2D, BiasAdd, Relu, MaxPool, Reshape, MatMul, Softmax
  consts.pb        one Const of each dtype placeflow has, each behind an Identity
  consts_unsupported.pb  Consts of dtypes placeflow does not have (int8, int16, uint16)
  control_flow.pb  control flow v1 (tf.compat.v1.disable_control_flow_v2: Switch, Merge, Enter,
                   Exit, NextIteration, LoopCond rather than If/While): a while_loop summing
                   i * x over i < n, a cond on a placeholder, nested while loops with a cond
                   in the outer body, a while_loop with maximum_iterations, and a loop whose
                   vector grows under a shape invariant (ConcatV2)
  control_flow_grad.pb  tf.gradients of control flow v1: a loop of tanh (the forward values on
                   StackV2 stacks, TanhGrad and SigmoidGrad in TF's (y, dy) order,
                   ControlTrigger), a loop whose body holds a cond, and a cond
  control_flow_ref.pb  control flow on a reference variable: a cond whose branch updates it
                   (RefSwitch) and a loop that updates another one per iteration (RefEnter,
                   parallel_iterations=1)
  mlp_resource.meta  mlp_resource as tf.compat.v1.train.export_meta_graph writes it (collections
                   "variables", "trainable_variables" of VariableDefs, "losses"; no Saver)
  expected.json    per GraphDef: its init target, the feeds (values) and TensorFlow's fetched
                   values, and the (name, op) of every node (TensorFlow's default names)
Variables start from Consts (tf.constant_initializer with fixed arrays), so running the
GraphDef's "init" gives placeflow the same weights as TensorFlow.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_control_flow_v2()  # cond and while_loop as TF 1.x graphs wrote them


def values_of(arr):
    """Shape and values in a JSON the C++ test's small parser reads: strings as hex, integers as
    decimal strings (int64 does not fit a double), bools as 0/1, floats as numbers."""
    arr = np.asarray(arr)
    if arr.dtype.kind in ("S", "O", "U"):
        vals = [(v if isinstance(v, bytes) else str(v).encode()).hex() for v in arr.ravel()]
    elif arr.dtype == np.bool_:
        vals = [int(v) for v in arr.ravel()]
    elif arr.dtype.kind in ("i", "u"):
        vals = [str(int(v)) for v in arr.ravel()]
    else:
        vals = [float(v) for v in arr.astype(np.float64).ravel()]
    return {"shape": list(arr.shape), "values": vals}


def mlp(use_resource):
    rng = np.random.RandomState(3)
    w1 = rng.uniform(-0.5, 0.5, (8, 16)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, (16,)).astype(np.float32)
    w2 = rng.uniform(-0.5, 0.5, (16, 4)).astype(np.float32)
    b2 = rng.uniform(-0.1, 0.1, (4,)).astype(np.float32)
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 8], name="x")
        labels = tf1.placeholder(tf.int32, [None], name="labels")
        with tf1.variable_scope("dense0"):
            W1 = tf1.get_variable("kernel", initializer=tf1.constant_initializer(w1),
                                  shape=w1.shape, use_resource=use_resource)
            B1 = tf1.get_variable("bias", initializer=tf1.constant_initializer(b1),
                                  shape=b1.shape, use_resource=use_resource)
        with tf1.variable_scope("dense1"):
            W2 = tf1.get_variable("kernel", initializer=tf1.constant_initializer(w2),
                                  shape=w2.shape, use_resource=use_resource)
            B2 = tf1.get_variable("bias", initializer=tf1.constant_initializer(b2),
                                  shape=b2.shape, use_resource=use_resource)
        h = tf.nn.relu(tf.matmul(x, W1) + B1)  # MatMul, add (AddV2), Relu
        logits = tf.nn.bias_add(tf.matmul(h, W2), B2, name="logits")
        probs = tf.nn.softmax(logits, name="probs")
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        loss = tf.reduce_mean(xent, name="loss")
        tf.identity(tf.reduce_sum(logits, axis=1, keepdims=True), name="row_sum")
        tf.identity(tf.reduce_max(h, axis=0), name="col_max")
        tf.identity(tf.reduce_min(logits, axis=[0, 1]), name="all_min")
        tf.identity(tf.reduce_mean(h, axis=-1, keepdims=True), name="row_mean")
        pair = tf.identity_n([probs, loss], name="pair")
        tf.identity(pair[1], name="pair_loss")
        tf.identity(tf.stop_gradient(h) * 2.0, name="scaled")  # StopGradient, mul
        tf.group(pair[0], pair[1], name="done")
        tf1.add_to_collection(tf1.GraphKeys.LOSSES, loss)
        tf1.global_variables_initializer()  # "init"
    feeds = {"x:0": rng.uniform(-1, 1, (5, 8)).astype(np.float32),
             "labels:0": np.array([0, 3, 1, 2, 3], np.int32)}
    fetches = ["probs:0", "loss:0", "row_sum:0", "col_max:0", "all_min:0", "row_mean:0",
               "pair:0", "pair:1", "pair_loss:0", "scaled:0", "logits:0"]
    return g, feeds, fetches


def convnet():
    rng = np.random.RandomState(5)
    k = rng.uniform(-0.5, 0.5, (3, 3, 1, 4)).astype(np.float32)
    kb = rng.uniform(-0.1, 0.1, (4,)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, (64, 3)).astype(np.float32)
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 8, 8, 1], name="x")
        K = tf1.get_variable("conv/kernel", initializer=tf1.constant_initializer(k), shape=k.shape)
        KB = tf1.get_variable("conv/bias", initializer=tf1.constant_initializer(kb),
                              shape=kb.shape)
        W = tf1.get_variable("fc/kernel", initializer=tf1.constant_initializer(w), shape=w.shape)
        c = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, K, [1, 1, 1, 1], "SAME"), KB))
        p = tf.nn.max_pool2d(c, 2, 2, "VALID")
        flat = tf.reshape(p, [-1, 64])
        logits = tf.identity(tf.matmul(flat, W), name="logits")
        tf.nn.softmax(logits, name="probs")
        tf1.global_variables_initializer()
    feeds = {"x:0": rng.uniform(-1, 1, (2, 8, 8, 1)).astype(np.float32)}
    return g, feeds, ["logits:0", "probs:0"]


def consts(dtypes):
    g = tf1.Graph()
    fetches = []
    with g.as_default():
        for name, dt, vals in dtypes:
            c = tf.constant(vals, dtype=dt, name="c_" + name)
            tf.identity(c, name="out_" + name)
            fetches.append("out_" + name + ":0")
    return g, {}, fetches


def control_flow():
    g = tf1.Graph()
    with g.as_default():
        n = tf1.placeholder(tf.int32, [], name="n")
        x = tf1.placeholder(tf.float32, [3], name="x")
        p = tf1.placeholder(tf.bool, [], name="p")
        # sum of i * x over i < n
        i, total = tf1.while_loop(
            lambda i, s: i < n,
            lambda i, s: (i + 1, s + tf.cast(i, tf.float32) * x),
            [tf.constant(0), tf.zeros([3])], name="sum_loop")
        tf.identity(total, name="loop_sum")
        tf.identity(i, name="loop_count")
        tf.identity(tf1.cond(p, lambda: x * 2.0, lambda: x - 1.0, name="branch"),
                    name="cond_out")
        tf.identity(tf1.cond(tf.logical_not(p), lambda: x * 2.0, lambda: x - 1.0,
                             name="branch_not"), name="cond_not_out")

        # for i < n: inner = sum over j < i of (j + 1); s = s + inner * x if i < 3 else s - x / 2
        def outer_body(i, s):
            inner = tf1.while_loop(lambda j, t: j < i,
                                   lambda j, t: (j + 1, t + tf.cast(j + 1, tf.float32)),
                                   [0, 0.0], name="inner")[1]
            s = tf1.cond(tf.less(i, 3), lambda: s + inner * x, lambda: s - x / 2.0)
            return i + 1, s

        tf.identity(tf1.while_loop(lambda i, s: i < n, outer_body,
                                   [tf.constant(0), tf.ones([3])], name="outer")[1],
                    name="nested_sum")
        # a condition that stays true, stopped after 5 iterations
        tf.identity(tf1.while_loop(lambda v: tf.constant(True), lambda v: [v * 2.0], [x],
                                   maximum_iterations=5, return_same_structure=True,
                                   name="capped")[0], name="capped_out")
        # v = [7]; for i < n: v = concat(v, [i]) (ConcatV2)
        grown = tf1.while_loop(
            lambda i, v: i < n,
            lambda i, v: (i + 1, tf.concat([v, tf.reshape(i, [1])], 0)),
            [tf.constant(0), tf.constant([7])],
            shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])], name="grow")[1]
        tf.identity(grown, name="grown")
    feeds = {"n:0": np.array(4, np.int32), "x:0": np.array([1.0, -2.0, 0.5], np.float32),
             "p:0": np.array(True)}
    fetches = ["loop_sum:0", "loop_count:0", "cond_out:0", "cond_not_out:0", "nested_sum:0",
               "capped_out:0", "grown:0"]
    return g, feeds, fetches


def control_flow_grad():
    """tf.gradients through TF 1.x control flow: the forward values a loop's gradient needs are
    pushed on stacks (StackV2, StackPushV2, StackPopV2) and popped by the backward loop, with
    TanhGrad/SigmoidGrad in TF's (y, dy) order and a ControlTrigger."""
    g = tf1.Graph()
    with g.as_default():
        n = tf1.placeholder(tf.int32, [], name="n")
        x = tf1.placeholder(tf.float32, [3], name="x")
        w = tf1.placeholder(tf.float32, [3], name="w")
        p = tf1.placeholder(tf.bool, [], name="p")
        # h <- tanh(h * w + x * i) for i < n, then sigmoid; loss sum(h^2)
        _, h = tf1.while_loop(
            lambda i, h: i < n,
            lambda i, h: (i + 1, tf.tanh(h * w + x * tf.cast(i, tf.float32))),
            [tf.constant(0), tf.ones([3])], name="rnn")
        loss = tf.reduce_sum(tf.square(tf.sigmoid(h)), name="rnn_loss")
        gx, gw = tf1.gradients(loss, [x, w])
        tf.identity(gx, name="rnn_grad_x")
        tf.identity(gw, name="rnn_grad_w")
        # a cond inside the loop: s <- i < 2 ? s * w : s + x
        _, s = tf1.while_loop(
            lambda i, s: i < n,
            lambda i, s: (i + 1, tf1.cond(tf.less(i, 2), lambda: s * w, lambda: s + x)),
            [tf.constant(0), tf.ones([3])], name="alternate")
        gx, gw = tf1.gradients(tf.reduce_sum(s * s, name="alternate_loss"), [x, w])
        tf.identity(gx, name="alternate_grad_x")
        tf.identity(gw, name="alternate_grad_w")
        # a cond outside any loop
        c = tf1.cond(p, lambda: tf.sigmoid(x * w), lambda: x * x, name="branch")
        tf.identity(tf1.gradients(tf.reduce_sum(c, name="cond_loss"), x)[0], name="cond_grad_x")
    feeds = {"n:0": np.array(4, np.int32), "x:0": np.array([1.0, -2.0, 0.5], np.float32),
             "w:0": np.array([0.3, 0.7, -0.4], np.float32), "p:0": np.array(True)}
    fetches = ["rnn_grad_x:0", "rnn_grad_w:0", "alternate_grad_x:0", "alternate_grad_w:0",
               "cond_grad_x:0"]
    return g, feeds, fetches


def control_flow_ref():
    g = tf1.Graph()
    with g.as_default():
        n = tf1.placeholder(tf.int32, [], name="n")
        p = tf1.placeholder(tf.bool, [], name="p")
        v = tf1.get_variable("v", initializer=tf1.constant_initializer(2.0), shape=[],
                             use_resource=False)
        w = tf1.get_variable("w", initializer=tf1.constant_initializer(10.0), shape=[],
                             use_resource=False)
        # the true branch adds 1 to w (RefSwitch); the false branch reads it
        tf.identity(tf1.cond(p, lambda: tf1.assign_add(w, 1.0), lambda: tf.identity(w),
                             name="update"), name="cond_ref")
        # each iteration adds 1 to v (RefEnter) and sums the values it leaves
        tf.identity(tf1.while_loop(
            lambda i, s: i < n,
            lambda i, s: (i + 1, s + tf1.assign_add(v, 1.0)),
            [tf.constant(0), tf.constant(0.0)], parallel_iterations=1, name="ref_loop")[1],
            name="ref_loop_sum")
        tf1.global_variables_initializer()
    feeds = {"n:0": np.array(4, np.int32), "p:0": np.array(True)}
    return g, feeds, ["cond_ref:0", "ref_loop_sum:0"]


SUPPORTED = [
    ("float", tf.float32, [[1.5, -2.25, 3.0], [0.0, 1e-8, -7.0]]),
    ("double", tf.float64, [1.0 / 3.0, -2.0, 1e300]),
    ("int32", tf.int32, [[1, -2], [2147483647, -2147483648]]),
    ("int64", tf.int64, [9223372036854775807, -5, 0]),
    ("bool", tf.bool, [True, False, True]),
    ("uint8", tf.uint8, [0, 7, 255]),
    ("half", tf.float16, [0.5, -1.0, 65504.0]),
    ("bfloat16", tf.bfloat16, [1.0, -0.5, 3.0]),
    ("string", tf.string, [b"alpha", b"", b"\x00\xffz"]),
    ("float_splat", tf.float32, np.full((2, 3), 4.5, np.float32)),  # one float_val, broadcast
]
UNSUPPORTED = [("int8", tf.int8, [1, -2]), ("int16", tf.int16, [300]),
               ("uint16", tf.uint16, [65535])]


def main(out):
    os.makedirs(out, exist_ok=True)
    expected = {"tensorflow_version": tf.__version__}
    cases = {"mlp_resource": mlp(True), "mlp_ref": mlp(False), "convnet": convnet(),
             "consts": consts(SUPPORTED), "control_flow": control_flow(),
             "control_flow_ref": control_flow_ref(), "control_flow_grad": control_flow_grad()}
    for name, (g, feeds, fetches) in cases.items():
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(g.as_graph_def().SerializeToString())
        with tf1.Session(graph=g) as sess:
            if g.get_operations() and any(op.name == "init" for op in g.get_operations()):
                sess.run("init")
            got = sess.run(fetches, feed_dict=feeds)
        expected[name] = {
            "init": "init" if any(op.name == "init" for op in g.get_operations()) else "",
            "feeds": {k: dict(values_of(v), dtype=v.dtype.name) for k, v in feeds.items()},
            "fetches": {k: values_of(v) for k, v in zip(fetches, got)},
            "nodes": [[op.name, op.type] for op in g.get_operations()],
        }
    g, _, _ = cases["mlp_resource"]
    tf1.train.export_meta_graph(filename=os.path.join(out, "mlp_resource.meta"), graph=g)
    g, _, _ = consts(UNSUPPORTED)
    with open(os.path.join(out, "consts_unsupported.pb"), "wb") as f:
        f.write(g.as_graph_def().SerializeToString())
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
