#!/usr/bin/env python3
"""Writes the image decode / resize fixtures that placeflow's C++ tests compare against.

What it makes (all into the folder holding this script, tests/data/image_fixtures/):
  * small encoded images (JPEG / PNG, odd sizes on purpose) built from a fixed
    smooth-plus-texture-plus-edges uint8 / uint16 pattern, plus three broken inputs
    (truncated.jpg, corrupt.png, not_an_image.bin);
  * what TensorFlow's DecodeJpeg / DecodePng return for them, for many
    channels / ratio / dct_method / dtype combinations;
  * ResizeBilinear / ResizeNearestNeighbor (+ their gradients) and tf.image.resize
    results for a fixed float32 [2, 5, 7, 3] input, in the legacy, align_corners
    and half_pixel modes, and one uint8 ResizeBilinear case;
  * README.md: every file with a one-line description, and the TF behaviours observed
    (computed by this script) that a C++ reimplementation must match.

Array text format (one array per .txt file):
  line 1: dtype name (float32, uint8 or uint16)
  line 2: shape, space-separated integers (empty line for a scalar)
  line 3: all values in row-major order, space-separated; floats as '%.9g'
          (round-trips a float32 exactly).

Rerun, from the repository root (needs TensorFlow 2.x CPU + numpy):
    /path/to/venv/bin/python tests/data/image_fixtures/make_fixtures.py
Made with TensorFlow 2.21.0 (CPU wheel) and numpy 2.4.  Everything is deterministic
(fixed patterns; the one random check image uses a fixed seed and is not saved).
"""
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_TOTAL_BYTES = 300 * 1024

# (group, file name, description) for every file written, in order; README is built from it.
FILES = []
# Observed behaviours, as README bullet lines.
BEHAVIOURS = []


def note(text):
    BEHAVIOURS.append(text)


# ----------------------------------------------------------------------------- writers

def _path(name):
    return os.path.join(HERE, name)


def write_bytes(name, data, group, desc):
    with open(_path(name), "wb") as f:
        f.write(data)
    FILES.append((group, name, desc))


def write_text(name, text, group, desc):
    with open(_path(name), "w", newline="\n") as f:
        f.write(text)
    FILES.append((group, name, desc))


_DTYPES = {np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16",
           np.dtype(np.float32): "float32"}


def write_array(name, arr, group, desc):
    arr = np.asarray(arr)
    dt = _DTYPES[arr.dtype]
    if dt == "float32":
        vals = " ".join("%.9g" % v for v in arr.ravel().tolist())
    else:
        vals = " ".join(str(int(v)) for v in arr.ravel().tolist())
    shape = " ".join(str(d) for d in arr.shape)
    write_text(name, "%s\n%s\n%s\n" % (dt, shape, vals), group,
               "%s [%s]%s" % (dt, ", ".join(str(d) for d in arr.shape), (" " + desc) if desc else ""))


def clean_error(e):
    """TF error message without the '{{function_node ...}}' prefix and ' [Op:X]' suffix."""
    msg = e.message if hasattr(e, "message") else str(e)
    msg = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", msg)
    msg = re.sub(r"\s*\[Op:[A-Za-z0-9_]+\].*$", "", msg, flags=re.S)
    return "%s: %s" % (type(e).__name__, msg.strip())


def try_call(fn):
    try:
        return fn(), None
    except (tf.errors.OpError, ValueError, TypeError) as e:  # noqa: PERF203
        return None, clean_error(e)


# ----------------------------------------------------------------------------- patterns

def pattern_u8(h, w, c):
    """Smooth ramp on the left third, a texture on the rest, and sharp edges."""
    y, x, ch = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    texture = (x * 37 + y * 23 + ch * 71 + ((x * y) % 17) * 9) % 256
    smooth = 20 + (x * 180) // max(w, 1) + (y * 40) // max(h, 1) + ch * 15
    v = np.where(x < w // 3, smooth, texture)
    v[:, w // 3, :] = 255                      # one-pixel white vertical line
    v[h // 2:, (2 * w) // 3:, :] = 0           # black block, bottom right
    if c == 4:                                  # alpha: ramp with a fully transparent corner
        v[..., 3] = (40 + x[..., 3] * 30 + y[..., 3] * 20) % 256
        v[0, 0, 3] = 0
        v[-1, -1, 3] = 255
    return v.astype(np.uint8)


def pattern_u16(h, w):
    """uint16 gray with low bytes spread over 0..255 (distinguishes >>8 from rounding)."""
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    v = (x * 9001 + y * 4099 + ((x * y) % 7) * 1237 + 300) % 65536
    v[0, 0] = 65535
    v[0, 1] = 0
    v[1, 0] = 0x80FF        # low byte 0xFF, high byte 0x80
    v[1, 1] = 0x7F80        # exactly half-way low byte
    return v.astype(np.uint16)[..., None]


def resize_input():
    n, y, x, c = np.meshgrid(np.arange(2), np.arange(5), np.arange(7), np.arange(3), indexing="ij")
    v = (10.0 * np.sin(0.37 * (n * 105 + y * 21 + x * 3 + c) + 0.1 * c)
         + 0.5 * x - 0.75 * y + 3.0 * c)
    # Rounded to multiples of 1/8 (exact in float32, short in text: keeps the folder under 300 KB),
    # then nudged up by 1/8 steps, in row-major order, until each [n, :, :, c] plane holds 35
    # distinct values, so a wrong nearest-neighbour index always changes the result.
    k = np.round(v * 8.0).astype(np.int64)
    for i in range(2):
        for ch in range(3):
            used = set()
            for yy in range(5):
                for xx in range(7):
                    while k[i, yy, xx, ch] in used:
                        k[i, yy, xx, ch] += 1
                    used.add(int(k[i, yy, xx, ch]))
    return (k / 8.0).astype(np.float32)


def upstream_grad(h, w):
    """Deterministic upstream gradient, quarter-integer values in [-1.5, 1.5]."""
    n, y, x, c = np.meshgrid(np.arange(2), np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    return ((((n * 7 + y * 5 + x * 3 + c * 11) % 13) - 6) * 0.25).astype(np.float32)


# ----------------------------------------------------------------------------- images

def make_images():
    imgs = {}
    g = "Encoded images"
    rgb13 = pattern_u8(9, 13, 3)
    b = tf.io.encode_jpeg(rgb13, quality=90).numpy()
    write_bytes("rgb_13x9.jpg", b, g, "JPEG 13 wide x 9 high, RGB, tf.io.encode_jpeg quality=90 (4:2:0)")
    imgs["rgb_13x9.jpg"] = b

    gray10 = pattern_u8(7, 10, 1)
    b = tf.io.encode_jpeg(gray10, quality=85).numpy()
    write_bytes("gray_10x7.jpg", b, g, "JPEG 10 wide x 7 high, grayscale, quality=85")
    imgs["gray_10x7.jpg"] = b

    rgb64 = pattern_u8(48, 64, 3)
    b = tf.io.encode_jpeg(rgb64, quality=95).numpy()
    write_bytes("rgb_64x48.jpg", b, g, "JPEG 64 wide x 48 high, RGB, quality=95 (4:2:0); ratio tests")
    imgs["rgb_64x48.jpg"] = b

    b = tf.io.encode_png(rgb13).numpy()
    write_bytes("rgb_13x9.png", b, g, "PNG 13 wide x 9 high, RGB 8-bit (same pixels as rgb_13x9.jpg's source)")
    imgs["rgb_13x9.png"] = b

    b = tf.io.encode_png(pattern_u8(6, 5, 4)).numpy()
    write_bytes("rgba_5x6.png", b, g, "PNG 5 wide x 6 high, RGBA 8-bit (alpha ramp, pixel (0,0) alpha 0)")
    imgs["rgba_5x6.png"] = b

    b = tf.io.encode_png(pattern_u16(5, 7)).numpy()
    write_bytes("gray16_7x5.png", b, g, "PNG 7 wide x 5 high, gray 16-bit (encode_png of a uint16 tensor)")
    imgs["gray16_7x5.png"] = b

    b = tf.io.encode_png(pattern_u8(4, 6, 1)).numpy()
    write_bytes("gray_6x4.png", b, g, "PNG 6 wide x 4 high, gray 8-bit")
    imgs["gray_6x4.png"] = b

    g = "Broken inputs"
    full = imgs["rgb_64x48.jpg"]
    trunc = full[: (len(full) * 60) // 100]
    write_bytes("truncated.jpg", trunc, g,
                "first 60%% (%d of %d bytes, floor) of rgb_64x48.jpg" % (len(trunc), len(full)))
    imgs["truncated.jpg"] = trunc

    bad = bytearray(imgs["rgb_13x9.png"])
    bad[40:60] = b"\x00" * 20
    write_bytes("corrupt.png", bytes(bad), g,
                "rgb_13x9.png with bytes [40, 60) (offsets 40..59) set to 0x00")
    imgs["corrupt.png"] = bytes(bad)

    text = (b"This is not an image. placeflow image decode fixture: plain ASCII text, "
            b"exactly one hundred bytes.\n")
    text = (text + b"." * 100)[:100]
    write_bytes("not_an_image.bin", text, g, "100 bytes of ASCII text")
    imgs["not_an_image.bin"] = text
    return imgs, {"rgb_13x9": rgb13}


# ----------------------------------------------------------------------------- decoding

DCT = {"": "default", "INTEGER_ACCURATE": "accurate"}


def decode_jpegs(imgs):
    g = "JPEG decodes (tf.io.decode_jpeg)"
    shapes = {}
    same_dct = {}
    out = {}
    for name in ("rgb_13x9.jpg", "gray_10x7.jpg", "rgb_64x48.jpg"):
        ratios = (1, 2, 4, 8) if name == "rgb_64x48.jpg" else (1, 2)
        for r in ratios:
            for c in (0, 1, 3):
                arrs = {}
                for d, dname in DCT.items():
                    a = tf.io.decode_jpeg(imgs[name], channels=c, ratio=r, dct_method=d).numpy()
                    arrs[dname] = a
                    out[(name, c, r, dname)] = a
                    shapes[(name, r, c)] = a.shape
                same_dct[(name, r, c)] = np.array_equal(arrs["default"], arrs["accurate"])
    # channels=0 of an RGB JPEG is byte-identical to channels=3: for rgb_64x48.jpg (the big one)
    # the c0 files are not written, to keep the folder under 300 KB (checked below).
    skipped = []
    for (name, c, r, dname), a in out.items():
        if name == "rgb_64x48.jpg" and c == 0:
            assert np.array_equal(a, out[(name, 3, r, dname)])
            skipped.append("c0_r%d_%s" % (r, dname))
            continue
        write_array("%s.c%d_r%d_%s.txt" % (name, c, r, dname), a, g, "")
    return out, shapes, same_dct, skipped


def decode_pngs(imgs):
    g = "PNG decodes (tf.io.decode_png)"
    out = {}
    for name in ("rgb_13x9.png", "rgba_5x6.png", "gray16_7x5.png", "gray_6x4.png"):
        for c in (0, 1, 3, 4):
            for dt in (tf.uint8, tf.uint16):
                a = tf.io.decode_png(imgs[name], channels=c, dtype=dt).numpy()
                out[(name, c, dt.name)] = a
                write_array("%s.c%d_%s.txt" % (name, c, dt.name), a, g, "")
    return out


def decode_broken(imgs, jpeg_out):
    g = "Broken-input decodes"
    errs = {}
    rec, err = try_call(lambda: tf.io.decode_jpeg(imgs["truncated.jpg"], try_recover_truncated=True,
                                                  acceptable_fraction=0.5).numpy())
    if err is None:
        write_array("truncated.jpg.recovered.txt", rec, g,
                    "decode_jpeg(truncated.jpg, try_recover_truncated=True, acceptable_fraction=0.5)")
    else:
        write_text("truncated.jpg.recovered.error.txt", err + "\n", g,
                   "error TF raised for decode_jpeg(truncated.jpg, try_recover_truncated=True, "
                   "acceptable_fraction=0.5)")
    errs["trunc_plain"] = try_call(lambda: tf.io.decode_jpeg(imgs["truncated.jpg"]).numpy())[1]
    a1, e1 = try_call(lambda: tf.io.decode_jpeg(
        imgs["truncated.jpg"], try_recover_truncated=True, acceptable_fraction=1.0).numpy())
    errs["trunc_frac1_same"] = e1 is None and rec is not None and np.array_equal(a1, rec)
    errs["trunc_norecover"] = {
        fr: try_call(lambda fr=fr: tf.io.decode_jpeg(imgs["truncated.jpg"], try_recover_truncated=False,
                                                     acceptable_fraction=fr).numpy())
        for fr in (0.25, 14.0 / 48.0, 0.3)}
    errs["corrupt_png"] = try_call(lambda: tf.io.decode_png(imgs["corrupt.png"]).numpy())[1]
    errs["corrupt_image"] = try_call(lambda: tf.io.decode_image(imgs["corrupt.png"]).numpy())[1]
    errs["text_png"] = try_call(lambda: tf.io.decode_png(imgs["not_an_image.bin"]).numpy())[1]
    errs["text_jpeg"] = try_call(lambda: tf.io.decode_jpeg(imgs["not_an_image.bin"]).numpy())[1]
    errs["text_image"] = try_call(lambda: tf.io.decode_image(imgs["not_an_image.bin"]).numpy())[1]
    a, e = try_call(lambda: tf.io.decode_jpeg(imgs["rgb_13x9.png"]).numpy())
    errs["png_as_jpeg"] = e if e else "decodes the PNG (shape %s, equal to decode_png: %s)" % (
        list(a.shape), np.array_equal(a, tf.io.decode_png(imgs["rgb_13x9.png"]).numpy()))
    a, e = try_call(lambda: tf.io.decode_png(imgs["rgb_13x9.jpg"]).numpy())
    errs["jpeg_as_png"] = e if e else "decodes the JPEG (shape %s, equal to decode_jpeg: %s)" % (
        list(a.shape), np.array_equal(a, jpeg_out[("rgb_13x9.jpg", 0, 1, "default")]))
    a, e = try_call(lambda: tf.io.decode_jpeg(imgs["rgb_13x9.jpg"], ratio=3).numpy())
    errs["ratio3"] = e if e else "accepted, shape %s" % list(a.shape)
    a, e = try_call(lambda: tf.io.decode_jpeg(imgs["rgb_13x9.jpg"], channels=2).numpy())
    errs["jpeg_c2"] = e if e else "accepted, shape %s" % list(a.shape)
    a, e = try_call(lambda: tf.io.decode_png(imgs["rgb_13x9.png"], channels=2).numpy())
    errs["png_c2"] = e if e else "accepted, shape %s" % list(a.shape)
    return rec, err, errs


# ----------------------------------------------------------------------------- resize

SIZES = [(3, 4), (9, 11), (5, 7), (10, 3)]
MODES = [("legacy", False, False), ("align_corners", True, False), ("half_pixel", False, True)]


def make_resize(decoded_rgb13_png):
    g = "Resize inputs"
    images = resize_input()
    write_array("resize_input.txt", images, g, "input images for every resize fixture (sin-based, multiples of 1/8, distinct per plane)")
    for h, w in SIZES:
        write_array("grad_%dx%d.txt" % (h, w), upstream_grad(h, w), g,
                    "upstream gradient for the %dx%d resize gradient fixtures" % (h, w))
    results = {}
    g = "Resize outputs"
    for h, w in SIZES:
        for mode, a, hp in MODES:
            o = tf.raw_ops.ResizeBilinear(images=images, size=[h, w], align_corners=a,
                                          half_pixel_centers=hp).numpy()
            results[("bilinear", h, w, mode)] = o
            write_array("resize_bilinear_%dx%d_%s.txt" % (h, w, mode), o, g, "")
        for mode, a, hp in MODES:
            o = tf.raw_ops.ResizeNearestNeighbor(images=images, size=[h, w], align_corners=a,
                                                 half_pixel_centers=hp).numpy()
            results[("nearest", h, w, mode)] = o
            write_array("resize_nearest_%dx%d_%s.txt" % (h, w, mode), o, g, "")
        for method in ("bilinear", "nearest"):
            o = tf.image.resize(images, [h, w], method=method).numpy()
            results[("image_resize_" + method, h, w)] = o
            write_array("image_resize_%s_%dx%d.txt" % (method, h, w), o, g, "")
    g = "Resize gradients"
    for h, w in SIZES:
        grads = upstream_grad(h, w)
        for mode, a, hp in MODES:
            o = tf.raw_ops.ResizeBilinearGrad(grads=grads, original_image=images, align_corners=a,
                                              half_pixel_centers=hp).numpy()
            results[("bilinear_grad", h, w, mode)] = o
            write_array("resize_bilinear_grad_%dx%d_%s.txt" % (h, w, mode), o, g, "")
        for mode, a, hp in MODES:
            o = tf.raw_ops.ResizeNearestNeighborGrad(grads=grads, size=[5, 7], align_corners=a,
                                                     half_pixel_centers=hp).numpy()
            results[("nearest_grad", h, w, mode)] = o
            write_array("resize_nearest_grad_%dx%d_%s.txt" % (h, w, mode), o, g, "")
    g = "Resize outputs"
    u8 = decoded_rgb13_png[None]
    o = tf.raw_ops.ResizeBilinear(images=u8, size=[5, 6], align_corners=False,
                                  half_pixel_centers=True).numpy()
    results["uint8"] = o
    write_array("resize_bilinear_uint8_5x6_half_pixel.txt", o, g,
                "ResizeBilinear(uint8 decode_png(rgb_13x9.png) as [1,9,13,3], [5, 6], half_pixel); "
                "TF outputs float32")
    return images, results


# ----------------------------------------------------------------------------- observations

def nn_index_candidates(out_n, in_n, mode):
    scale_lin = np.float32(in_n) / np.float32(out_n)
    scale_ac = (np.float32(in_n - 1) / np.float32(out_n - 1)) if out_n > 1 else np.float32(0)
    o = np.arange(out_n, dtype=np.float32)
    c = {}
    if mode == "legacy":
        c["floor(o*in/out)"] = np.floor(o * scale_lin)
    elif mode == "align_corners":
        c["round-half-away(o*(in-1)/(out-1))"] = np.sign(o * scale_ac) * np.floor(np.abs(o * scale_ac) + 0.5)
        c["round-half-even(o*(in-1)/(out-1))"] = np.rint(o * scale_ac)
    else:
        c["floor((o+0.5)*in/out)"] = np.floor((o + np.float32(0.5)) * scale_lin)
        c["round-half-away((o+0.5)*in/out)"] = np.floor((o + np.float32(0.5)) * scale_lin + np.float32(0.5))
    return {k: np.minimum(np.maximum(v, 0), in_n - 1).astype(np.int64) for k, v in c.items()}


def bilinear_ref(img, h, w, mode):
    """float32 reference in TF's formula (see README)."""
    _, ih, iw, _ = img.shape

    def coords(out_n, in_n):
        if mode == "align_corners" and out_n > 1:
            scale = np.float32(in_n - 1) / np.float32(out_n - 1)
        else:
            scale = np.float32(in_n) / np.float32(out_n)
        o = np.arange(out_n, dtype=np.float32)
        if mode == "half_pixel":
            src = (o + np.float32(0.5)) * scale - np.float32(0.5)
        else:
            src = o * scale
        lo = np.maximum(np.floor(src), 0).astype(np.int64)
        hi = np.minimum(np.ceil(src), in_n - 1).astype(np.int64)
        lo = np.minimum(lo, in_n - 1)
        lerp = (src - np.floor(src)).astype(np.float32)
        return lo, hi, lerp

    y0, y1, yl = coords(h, ih)
    x0, x1, xl = coords(w, iw)
    img = img.astype(np.float32)
    tl = img[:, y0][:, :, x0]
    tr = img[:, y0][:, :, x1]
    bl = img[:, y1][:, :, x0]
    br = img[:, y1][:, :, x1]
    xl = xl[None, None, :, None]
    yl = yl[None, :, None, None]
    top = tl + (tr - tl) * xl
    bot = bl + (br - bl) * xl
    return (top + (bot - top) * yl).astype(np.float32)


CAND16TO8 = {"v >> 8 (truncate, high byte)": lambda v: v >> 8,
             "round(v / 257)": lambda v: np.floor(v / 257.0 + 0.5).astype(np.int64),
             "(v*255 + 32895) >> 16 (libpng scale_16)": lambda v: (v * 255 + 32895) >> 16}


def bilinear_grad_ref(grads, ih, iw, mode):
    """float32 reference of ResizeBilinearGrad, same weights and accumulation order as TF's CPU kernel."""
    _, h, w, _ = grads.shape

    def coords(out_n, in_n):
        if mode == "align_corners" and out_n > 1:
            scale = np.float32(in_n - 1) / np.float32(out_n - 1)
        else:
            scale = np.float32(in_n) / np.float32(out_n)
        res = []
        for o in range(out_n):
            src = (np.float32(o) + np.float32(0.5)) * scale - np.float32(0.5) if mode == "half_pixel" \
                else np.float32(o) * scale
            f = np.floor(src)
            res.append((max(int(f), 0), min(int(np.ceil(src)), in_n - 1), np.float32(src - f)))
        return res

    ys, xs = coords(h, ih), coords(w, iw)
    out = np.zeros((grads.shape[0], ih, iw, grads.shape[3]), np.float32)
    one = np.float32(1)
    for y, (t, b, yl) in enumerate(ys):
        for x, (l, r, xl) in enumerate(xs):
            g = grads[:, y, x, :]
            out[:, t, l, :] += g * (one - yl) * (one - xl)
            out[:, t, r, :] += g * (one - yl) * xl
            out[:, b, l, :] += g * yl * (one - xl)
            out[:, b, r, :] += g * yl * xl
    return out


def observe(imgs, src, jpeg_out, shapes, same_dct, skipped, png_out, rec, rec_err, errs,
            images, results):
    # ---- JPEG
    rs = []
    for name, (h, w) in (("rgb_13x9.jpg", (9, 13)), ("gray_10x7.jpg", (7, 10)), ("rgb_64x48.jpg", (48, 64))):
        for r in ((1, 2, 4, 8) if name == "rgb_64x48.jpg" else (1, 2)):
            s = shapes[(name, r, 3)]
            assert s[:2] == (-(-h // r), -(-w // r)), (name, r, s)
            rs.append("%s r%d -> %dx%d" % (name, r, s[0], s[1]))
    note("decode_jpeg ratio R gives height ceil(H/R) x width ceil(W/R) (libjpeg scaled IDCT, "
         "not a resize of the full decode): " + "; ".join(rs) + ".")
    note("decode_jpeg channels=0 keeps the file's component count: RGB JPEG -> 3 channels, gray "
         "JPEG -> 1 (shapes: rgb_13x9.jpg c0 %s, gray_10x7.jpg c0 %s). channels=0 is identical to "
         "channels=3 / channels=1 respectively in every case here." % (
             list(jpeg_out[("rgb_13x9.jpg", 0, 1, "default")].shape),
             list(jpeg_out[("gray_10x7.jpg", 0, 1, "default")].shape)))
    for k in jpeg_out:
        name, c, r, d = k
        if c == 0:
            native = 1 if name.startswith("gray") else 3
            assert np.array_equal(jpeg_out[k], jpeg_out[(name, native, r, d)])
    g1 = jpeg_out[("gray_10x7.jpg", 1, 1, "default")]
    g3 = jpeg_out[("gray_10x7.jpg", 3, 1, "default")]
    rep = np.array_equal(g3, np.repeat(g1, 3, axis=-1))
    note("Gray JPEG with channels=3: the gray value replicated into R=G=B: %s." % rep)
    c1 = jpeg_out[("rgb_13x9.jpg", 1, 1, "accurate")].astype(np.int32)
    c3 = jpeg_out[("rgb_13x9.jpg", 3, 1, "accurate")].astype(np.float64)
    y_from_rgb = np.round(c3 @ np.array([0.299, 0.587, 0.114]))[..., None].astype(np.int32)
    note("RGB JPEG with channels=1 is libjpeg's own gray output (the decoded Y plane, "
         "JCS_GRAYSCALE), not a conversion of the decoded RGB: vs round(0.299R+0.587G+0.114B) of "
         "the c3 decode it differs at %d of %d pixels (max |diff| %d) for rgb_13x9.jpg accurate r1."
         % (int((c1 != y_from_rgb).sum()), c1.size, int(np.abs(c1 - y_from_rgb).max())))
    diffs = sorted("%s r%d c%d" % (n, r, c) for (n, r, c), same in same_dct.items() if not same)
    sames = sorted("%s r%d c%d" % (n, r, c) for (n, r, c), same in same_dct.items() if same)
    note("dct_method '' (TF default = libjpeg JDCT_IFAST) vs 'INTEGER_ACCURATE' (JDCT_ISLOW): "
         "results differ for [%s]; identical for [%s]. I.e. the reduced-size IDCTs used for ratio "
         ">= 2 ignore dct_method, except that at ratio 2 the 4:2:0 chroma of an RGB JPEG still "
         "apparently depends on it (consistent with libjpeg-turbo keeping an 8x8 chroma IDCT there), "
         "so c0/c3 differ at r2 while c1 does not."
         % (", ".join(diffs), ", ".join(sames)))
    note("tf.io.encode_jpeg defaults used for the .jpg files: chroma_downsampling=True (4:2:0), "
         "baseline (not progressive); decode uses fancy_upscaling=True (libjpeg fancy upsampling).")
    if skipped:
        note("Size budget: for rgb_64x48.jpg the channels=0 decodes (%s) are NOT written; the "
             "script asserts they equal the c3 files, so test c0 against the c3 fixture."
             % ", ".join(skipped))

    # ---- truncated
    full = jpeg_out[("rgb_64x48.jpg", 3, 1, "default")]

    def rows_summary(a):
        eq = [i for i in range(a.shape[0]) if np.array_equal(a[i], full[i])]
        n_eq = 0
        while n_eq < a.shape[0] and np.array_equal(a[n_eq], full[n_eq]):
            n_eq += 1
        zero = [i for i in range(a.shape[0]) if not a[i].any()]
        return n_eq, zero

    if rec_err is None:
        n_eq, zero = rows_summary(rec)
        rest = rec[n_eq:]
        note("truncated.jpg (%d of %d bytes) with try_recover_truncated=True, acceptable_fraction=0.5 "
             "decodes to shape %s with no error. TF's memory source (jpeg_handle.cc "
             "MemFillInputBuffer) hands libjpeg a fake EOI (FF D9) when the data runs out, so "
             "libjpeg-turbo itself emits all %d rows (stderr: 'Corrupt JPEG data: bad Huffman code'): "
             "rows 0..%d equal the full decode; rows %d..%d are libjpeg-turbo's output for the cut / "
             "missing entropy data (of their values %.0f%% still equal the full decode, %.0f%% are 0) - "
             "reproducible "
             "only with the same libjpeg-turbo, so compare rows 0..%d exactly and the rest by shape. "
             "TF's own fill (replicate the row above; all-zero if row 0 is missing) only runs when "
             "libjpeg returns no row, which does not happen here; acceptable_fraction=1.0 gives the "
             "same array: %s."
             % (len(imgs["truncated.jpg"]), len(imgs["rgb_64x48.jpg"]), list(rec.shape),
                rec.shape[0], n_eq - 1, n_eq, rec.shape[0] - 1, 100.0 * float((rest == full[n_eq:]).mean()),
                100.0 * float((rest == 0).mean()),
                n_eq - 1, errs["trunc_frac1_same"]))
    else:
        note("truncated.jpg with try_recover_truncated=True, acceptable_fraction=0.5 raises: " + rec_err)
    note("truncated.jpg with try_recover_truncated=False (the default) and the default "
         "acceptable_fraction=1: %s (TF logs 'Premature end of JPEG data. Stopped at line 14/48': "
         "its source suspends at the end of data, so only 14 rows were read)." % errs["trunc_plain"])
    nr = errs["trunc_norecover"]
    parts = []
    for fr, (a, e) in sorted(nr.items()):
        if e is None:
            n_eq, zero = rows_summary(a)
            parts.append("acceptable_fraction=%g -> shape %s, rows 0..%d = full decode, rows %d..%d "
                         "all 0" % (fr, list(a.shape), n_eq - 1, zero[0], zero[-1]))
            assert zero == list(range(zero[0], a.shape[0]))
        else:
            parts.append("acceptable_fraction=%g -> %s" % (fr, e))
    note("try_recover_truncated=False with a lower acceptable_fraction succeeds when rows_read / "
         "height >= acceptable_fraction and zero-fills the unread rows: " + "; ".join(parts) + ".")

    # ---- PNG
    note("decode_png channels=0 keeps the file's channels: rgb_13x9.png -> %d, rgba_5x6.png -> %d, "
         "gray16_7x5.png -> %d, gray_6x4.png -> %d."
         % tuple(png_out[(n, 0, "uint8")].shape[-1]
                 for n in ("rgb_13x9.png", "rgba_5x6.png", "gray16_7x5.png", "gray_6x4.png")))
    v16 = png_out[("gray16_7x5.png", 0, "uint16")].astype(np.int64)
    v8 = png_out[("gray16_7x5.png", 0, "uint8")].astype(np.int64)
    assert np.array_equal(v16, pattern_u16(5, 7).astype(np.int64))
    # exhaustive check of 16 -> 8 on all 65536 values
    allv = np.arange(65536, dtype=np.uint16).reshape(256, 256, 1)
    all8 = tf.io.decode_png(tf.io.encode_png(allv), dtype=tf.uint8).numpy().astype(np.int64)
    allv = allv.astype(np.int64)
    cand = {k: f(allv) for k, f in CAND16TO8.items()}
    match = [k for k, v in cand.items() if np.array_equal(v, all8)]
    if match:
        assert np.array_equal(v8, {k: f(v16) for k, f in CAND16TO8.items()}[match[0]])
    note("decode_png of a 16-bit PNG with dtype=uint8 gives %s (checked on all 65536 values; "
         "e.g. 0x80FF -> %d, 0x7F80 -> %d)." % (" == ".join(match) if match else "NO simple formula",
                                               v8[1, 0, 0], v8[1, 1, 0]))
    p8 = png_out[("rgb_13x9.png", 0, "uint8")].astype(np.int64)
    p16 = png_out[("rgb_13x9.png", 0, "uint16")].astype(np.int64)
    note("decode_png of an 8-bit PNG with dtype=uint16 gives v*257 (full-range scale, 255 -> 65535): %s; "
         "v<<8: %s." % (np.array_equal(p16, p8 * 257), np.array_equal(p16, p8 << 8)))
    # RGB -> gray formula, checked on a seeded random 64x64 image (not saved) + fixtures
    rng = np.random.RandomState(1234)
    rnd = rng.randint(0, 256, size=(64, 64, 3)).astype(np.uint8)
    rnd[0, :, :] = rnd[0, :, :1]  # a few gray pixels
    rg = tf.io.decode_png(tf.io.encode_png(rnd), channels=1).numpy().astype(np.int64)[..., 0]
    rnd16 = (rnd.astype(np.int64) * 251 + rng.randint(0, 251, size=rnd.shape)).astype(np.uint16)
    rg16 = tf.io.decode_png(tf.io.encode_png(rnd16), channels=1, dtype=tf.uint16).numpy().astype(np.int64)[..., 0]
    coefs = {"(6968, 23434, 2366)": (6968, 23434, 2366), "(9798, 19235, 3735)": (9798, 19235, 3735),
             "(9797, 19234, 3737)": (9797, 19234, 3737)}
    found8, found16 = [], []
    for cname, (rc, gc, bc) in coefs.items():
        for rnd_add, rname in ((0, ">>15"), (16384, "+16384 >>15")):
            for arr, res, found in ((rnd, rg, found8), (rnd16, rg16, found16)):
                a = arr.astype(np.int64)
                guess = (rc * a[..., 0] + gc * a[..., 1] + bc * a[..., 2] + rnd_add) >> 15
                if np.array_equal(guess, res):
                    found.append("(%d*R + %d*G + %d*B %s)" % (rc, gc, bc, rname))
    note("decode_png RGB -> channels=1 (libpng png_set_rgb_to_gray): 8-bit matches %s; 16-bit "
         "matches %s (checked on a seeded 64x64 random image per depth)."
         % (" or ".join(found8) or "NONE of the candidate formulas",
            " or ".join(found16) or "NONE of the candidate formulas"))
    ra = png_out[("rgba_5x6.png", 0, "uint8")].astype(np.int64)
    r3 = png_out[("rgba_5x6.png", 3, "uint8")].astype(np.int64)
    r1 = png_out[("rgba_5x6.png", 1, "uint8")].astype(np.int64)
    rgb1 = tf.io.decode_png(tf.io.encode_png(ra[..., :3].astype(np.uint8)), channels=1).numpy()
    note("RGBA PNG -> channels=3 drops alpha (no compositing): %s; -> channels=1 = gray of RGB with "
         "alpha dropped: %s." % (np.array_equal(r3, ra[..., :3]), np.array_equal(r1, rgb1)))
    ok = []
    for name in ("rgb_13x9.png", "gray_6x4.png", "gray16_7x5.png"):
        for dt, mx in (("uint8", 255), ("uint16", 65535)):
            a4 = png_out[(name, 4, dt)]
            a3 = png_out[(name, 3, dt)]
            ok.append(bool(np.all(a4[..., 3] == mx) and np.array_equal(a4[..., :3], a3)))
    g1 = png_out[("gray_6x4.png", 1, "uint8")]
    g3 = png_out[("gray_6x4.png", 3, "uint8")]
    note("PNG without alpha -> channels=4 appends alpha = 255 (uint8) / 65535 (uint16), colour same as "
         "channels=3: %s; gray -> channels=3 replicates the gray value: %s."
         % (all(ok), np.array_equal(g3, np.repeat(g1, 3, axis=-1))))

    # ---- errors on broken / odd inputs
    note("corrupt.png: decode_png raises %s" % errs["corrupt_png"])
    note("corrupt.png: decode_image raises %s" % errs["corrupt_image"])
    note("not_an_image.bin: decode_png -> %s; decode_jpeg -> %s; decode_image -> %s"
         % (errs["text_png"], errs["text_jpeg"], errs["text_image"]))
    note("decode_jpeg on PNG bytes (rgb_13x9.png): %s. decode_png on JPEG bytes (rgb_13x9.jpg): %s."
         % (errs["png_as_jpeg"], errs["jpeg_as_png"]))
    note("decode_jpeg ratio=3: %s. decode_jpeg channels=2: %s. decode_png channels=2: %s."
         % (errs["ratio3"], errs["jpeg_c2"], errs["png_c2"]))

    # ---- resize
    idx_img = (np.arange(5)[:, None] * 100 + np.arange(7)[None, :]).astype(np.float32)[None, :, :, None]
    nn_rules = {}
    for mode, a, hp in MODES:
        agree = None
        for h, w in SIZES + [(2, 3), (13, 17), (1, 1), (4, 15)]:
            o = tf.raw_ops.ResizeNearestNeighbor(images=idx_img, size=[h, w], align_corners=a,
                                                 half_pixel_centers=hp).numpy()[0, :, :, 0]
            ys = (o[:, 0] // 100).astype(np.int64)
            xs = (o[0, :] % 100).astype(np.int64)
            ok = {k for k, v in nn_index_candidates(h, 5, mode).items() if np.array_equal(v, ys)}
            ok &= {k for k, v in nn_index_candidates(w, 7, mode).items() if np.array_equal(v, xs)}
            agree = ok if agree is None else agree & ok
        nn_rules[mode] = sorted(agree)
    note("ResizeNearestNeighbor source index (computed in float32, then clamped to [0, in-1]), "
         "checked on sizes 3x4, 9x11, 5x7, 10x3, 2x3, 13x17, 1x1, 4x15: legacy = %s; "
         "align_corners = %s; half_pixel = %s. (scale = in/out; for align_corners (in-1)/(out-1), "
         "0 when out == 1.)" % (" / ".join(nn_rules["legacy"]) or "no candidate matched",
                                " / ".join(nn_rules["align_corners"]) or "no candidate matched",
                                " / ".join(nn_rules["half_pixel"]) or "no candidate matched"))
    md = {}
    for mode, _, _ in MODES:
        m = 0.0
        for h, w in SIZES:
            m = max(m, float(np.abs(bilinear_ref(images, h, w, mode)
                                    - results[("bilinear", h, w, mode)]).max()))
        md[mode] = m
    note("ResizeBilinear = float32 formula: src = o*scale (legacy, scale=in/out), o*(in-1)/(out-1) "
         "(align_corners), (o+0.5)*in/out - 0.5 (half_pixel); lo = max(floor(src), 0), "
         "hi = min(ceil(src), in-1), lerp = src - floor(src); top = tl + (tr-tl)*xl, "
         "bottom = bl + (br-bl)*xl, out = top + (bottom-top)*yl. Max |TF - this reference| over "
         "the fixtures: legacy %.3g, align_corners %.3g, half_pixel %.3g."
         % (md["legacy"], md["align_corners"], md["half_pixel"]))
    eb = all(np.array_equal(results[("image_resize_bilinear", h, w)],
                            results[("bilinear", h, w, "half_pixel")]) for h, w in SIZES)
    en = all(np.array_equal(results[("image_resize_nearest", h, w)],
                            results[("nearest", h, w, "half_pixel")]) for h, w in SIZES)
    note("tf.image.resize (TF2, antialias=False): method='bilinear' is bit-identical to ResizeBilinear "
         "half_pixel: %s; method='nearest' is bit-identical to ResizeNearestNeighbor half_pixel: %s."
         % (eb, en))
    u8 = results["uint8"]
    u8f = tf.raw_ops.ResizeBilinear(images=tf.cast(src["rgb_13x9"][None], tf.float32), size=[5, 6],
                                    half_pixel_centers=True).numpy()
    nn_u8 = tf.raw_ops.ResizeNearestNeighbor(images=src["rgb_13x9"][None], size=[5, 6],
                                             half_pixel_centers=True).numpy()
    ir_u8 = tf.image.resize(src["rgb_13x9"][None], [5, 6], method="bilinear").numpy()
    ir_u8n = tf.image.resize(src["rgb_13x9"][None], [5, 6], method="nearest").numpy()
    note("ResizeBilinear on uint8 outputs float32 (not rounded), equal to casting the input to float32 "
         "first: %s (dtype %s). ResizeNearestNeighbor keeps the input dtype (%s). tf.image.resize on "
         "uint8: bilinear -> %s, nearest -> %s." % (np.array_equal(u8, u8f), u8.dtype, nn_u8.dtype,
                                                    ir_u8.dtype, ir_u8n.dtype))
    with tf.GradientTape() as tape:
        x = tf.constant(images)
        tape.watch(x)
        y = tf.raw_ops.ResizeBilinear(images=x, size=[9, 11], half_pixel_centers=True)
    tg = tape.gradient(y, x, output_gradients=upstream_grad(9, 11)).numpy()
    gd = {}
    for mode, _, _ in MODES:
        gd[mode] = max(float(np.abs(bilinear_grad_ref(upstream_grad(h, w), 5, 7, mode)
                                    - results[("bilinear_grad", h, w, mode)]).max()) for h, w in SIZES)
    note("ResizeBilinearGrad: output zero-initialised float32 [N, 5, 7, C]; for each grads pixel in "
         "row-major (y, x) order, g is added to (top,left), (top,right), (bottom,left), "
         "(bottom,right) times (1-yl)*(1-xl), (1-yl)*xl, yl*(1-xl), yl*xl (float32, evaluated "
         "g*a*b left to right), with the forward ResizeBilinear src/lo/hi/lerp rule. Max |TF - "
         "this reference|: legacy %.3g, align_corners %.3g, half_pixel %.3g. It equals autodiff of "
         "ResizeBilinear: %s. ResizeNearestNeighborGrad adds each upstream value into its forward "
         "nearest source pixel; output dtype = grads dtype."
         % (gd["legacy"], gd["align_corners"], gd["half_pixel"],
            np.array_equal(tg, results[("bilinear_grad", 9, 11, "half_pixel")])))
    # consistency of nearest grad with the forward index rule
    ok = True
    for h, w in SIZES:
        for mode, a, hp in MODES:
            o = tf.raw_ops.ResizeNearestNeighbor(images=idx_img, size=[h, w], align_corners=a,
                                                 half_pixel_centers=hp).numpy()[0, :, :, 0]
            ys, xs = (o // 100).astype(int), (o % 100).astype(int)
            g = upstream_grad(h, w).astype(np.float64)
            acc = np.zeros((2, 5, 7, 3))
            for i in range(h):
                for j in range(w):
                    acc[:, ys[i, j], xs[i, j], :] += g[:, i, j, :]
            ok &= bool(np.array_equal(acc.astype(np.float32), results[("nearest_grad", h, w, mode)]))
    note("ResizeNearestNeighborGrad uses exactly the forward ResizeNearestNeighbor index rule in all "
         "three modes: %s." % ok)
    e1 = try_call(lambda: tf.raw_ops.ResizeBilinear(images=images, size=[3, 4], align_corners=True,
                                                    half_pixel_centers=True).numpy())[1]
    e2 = try_call(lambda: tf.raw_ops.ResizeNearestNeighbor(images=images, size=[3, 4], align_corners=True,
                                                           half_pixel_centers=True).numpy())[1]
    e3 = try_call(lambda: tf.raw_ops.ResizeBilinearGrad(grads=upstream_grad(3, 4), original_image=images,
                                                        align_corners=True,
                                                        half_pixel_centers=True).numpy())[1]
    e4 = try_call(lambda: tf.raw_ops.ResizeNearestNeighborGrad(grads=upstream_grad(3, 4), size=[5, 7],
                                                               align_corners=True,
                                                               half_pixel_centers=True).numpy())[1]
    note("align_corners=True with half_pixel_centers=True: ResizeBilinear -> %s | ResizeNearestNeighbor "
         "-> %s | ResizeBilinearGrad -> %s | ResizeNearestNeighborGrad -> %s"
         % (e1 or "no error", e2 or "no error", e3 or "no error", e4 or "no error"))
    if e4 is None:
        # what the grad op computes for (True, True): probe the row / column mapping with one-hots
        ok = True
        for h, w in SIZES + [(2, 3), (13, 17)]:
            for axis, (n_out, n_in) in enumerate(((h, 5), (w, 7))):
                got = []
                for i in range(n_out):
                    g = np.zeros((1, h, w, 1), np.float32)
                    if axis == 0:
                        g[0, i, :, 0] = 1
                    else:
                        g[0, :, i, 0] = 1
                    r = tf.raw_ops.ResizeNearestNeighborGrad(grads=g, size=[5, 7], align_corners=True,
                                                             half_pixel_centers=True).numpy()[0, :, :, 0]
                    got.append(int(np.argmax(r.sum(axis=1 - axis))))
                s_ac = np.float32(n_in - 1) / np.float32(n_out - 1) if n_out > 1 else np.float32(0)
                o = np.arange(n_out, dtype=np.float32)
                want = np.minimum(np.floor((o + np.float32(0.5)) * s_ac + np.float32(0.5)), n_in - 1)
                ok &= got == [int(v) for v in want]
        note("ResizeNearestNeighborGrad with align_corners=True AND half_pixel_centers=True does not "
             "raise; it maps grads index o to min(round-half-away((o+0.5)*(in-1)/(out-1)), in-1) "
             "(in = size, out = grads dim; both options applied at once): %s." % ok)
    e5 = try_call(lambda: tf.raw_ops.ResizeBilinear(images=images, size=[0, 4]).numpy())
    e6 = try_call(lambda: tf.raw_ops.ResizeBilinear(images=images[0], size=[3, 4]).numpy())
    note("ResizeBilinear size [0, 4]: %s. 3-D images (no batch): %s."
         % (e5[1] or "accepted, shape %s" % list(e5[0].shape),
            e6[1] or "accepted, shape %s" % list(e6[0].shape)))


# ----------------------------------------------------------------------------- README

GROUP_ORDER = ["Generator", "Encoded images", "Broken inputs", "JPEG decodes (tf.io.decode_jpeg)",
               "PNG decodes (tf.io.decode_png)", "Broken-input decodes", "Resize inputs",
               "Resize outputs", "Resize gradients"]


GROUP_NOTES = {
    "JPEG decodes (tf.io.decode_jpeg)":
        "`<image>.c<C>_r<R>_<D>.txt` = tf.io.decode_jpeg(<image>, channels=C, ratio=R, dct_method=D), "
        "D `default` = '' and `accurate` = 'INTEGER_ACCURATE'; other arguments at their defaults.",
    "PNG decodes (tf.io.decode_png)":
        "`<image>.c<C>_<T>.txt` = tf.io.decode_png(<image>, channels=C, dtype=T).",
    "Resize outputs":
        "`resize_bilinear_<h>x<w>_<mode>.txt` = tf.raw_ops.ResizeBilinear(resize_input, [h, w], mode); "
        "`resize_nearest_<h>x<w>_<mode>.txt` = tf.raw_ops.ResizeNearestNeighbor(resize_input, [h, w], "
        "mode); `image_resize_<method>_<h>x<w>.txt` = tf.image.resize(resize_input, [h, w], "
        "method=<method>) (TF2 defaults, antialias=False).",
    "Resize gradients":
        "`resize_bilinear_grad_<h>x<w>_<mode>.txt` = tf.raw_ops.ResizeBilinearGrad(grads=grad_<h>x<w>, "
        "original_image=resize_input, mode); `resize_nearest_grad_<h>x<w>_<mode>.txt` = "
        "tf.raw_ops.ResizeNearestNeighborGrad(grads=grad_<h>x<w>, size=[5, 7], mode).",
}


def write_readme():
    lines = ["# Image decode / resize fixtures", "",
             "Generated by `make_fixtures.py` with TensorFlow %s (CPU) and numpy %s; rerun from the "
             "repository root with" % (tf.__version__, np.__version__), "",
             "    /path/to/venv/bin/python tests/data/image_fixtures/make_fixtures.py", "",
             "Array files (`.txt`): line 1 dtype (`float32`, `uint8`, `uint16`), line 2 shape "
             "(space-separated; empty for a scalar), line 3 all values row-major, space-separated, "
             "floats as `%.9g` (exact float32 round trip). Decode fixtures are named "
             "`<image>.<variant>.txt`: JPEG `c<channels>_r<ratio>_<default|accurate>` (dct_method '' "
             "or 'INTEGER_ACCURATE'), PNG `c<channels>_<uint8|uint16>` (decode_png dtype). Resize "
             "modes: `legacy` = (align_corners=False, half_pixel_centers=False), `align_corners` = "
             "(True, False), `half_pixel` = (False, True). Shapes below are [N, H, W, C] / [H, W, C].",
             "", "## Files", ""]
    files = [("Generator", "make_fixtures.py", "this generator"),
             ("Generator", "README.md", "this file")] + FILES
    for grp in GROUP_ORDER:
        items = [f for f in files if f[0] == grp]
        if not items:
            continue
        lines.append("### " + grp)
        lines.append("")
        if grp in GROUP_NOTES:
            lines.append(GROUP_NOTES[grp])
            lines.append("")
        for _, name, desc in items:
            lines.append("- `%s` — %s" % (name, desc))
        lines.append("")
    lines += ["## Observed TF behaviours a C++ reimplementation must match", ""]
    lines += ["- " + b for b in BEHAVIOURS]
    lines.append("")
    with open(_path("README.md"), "w", newline="\n") as f:
        f.write("\n".join(lines))


def main():
    imgs, src = make_images()
    jpeg_out, shapes, same_dct, skipped = decode_jpegs(imgs)
    png_out = decode_pngs(imgs)
    rec, rec_err, errs = decode_broken(imgs, jpeg_out)
    images, results = make_resize(png_out[("rgb_13x9.png", 3, "uint8")])
    observe(imgs, src, jpeg_out, shapes, same_dct, skipped, png_out, rec, rec_err, errs, images, results)
    write_readme()
    total = sum(os.path.getsize(_path(n)) for _, n, _ in FILES)
    print("wrote %d fixture files, %d bytes (+ README.md, %d bytes)"
          % (len(FILES), total, os.path.getsize(_path("README.md"))))
    for b in BEHAVIOURS:
        print("-", b)
    if total > MAX_TOTAL_BYTES:
        print("WARNING: fixtures exceed %d bytes" % MAX_TOTAL_BYTES, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
