"""A CMYK JPEG (Adobe's inverted CMYK, as Pillow and Photoshop write it) and what TensorFlow
decodes from it, for tests/ops/image_ops_test.cc. Needs Pillow and TensorFlow (2.21 made the
committed files):

    /path/to/venv/bin/python tests/data/image_fixtures/make_cmyk_fixture.py   # from the repo root
"""
import os

import numpy as np
import tensorflow as tf
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
h, w = 6, 8
y, x = np.mgrid[0:h, 0:w]
cmyk = np.stack([(x * 30) % 256, (y * 40) % 256, ((x + y) * 20) % 256, (x * y * 7) % 256],
                axis=-1).astype(np.uint8)
path = os.path.join(HERE, "cmyk_8x6.jpg")
Image.fromarray(cmyk, mode="CMYK").save(path, quality=95)
data = open(path, "rb").read()
for channels in (0, 3):
    rgb = tf.io.decode_jpeg(data, channels=channels).numpy()
    with open(os.path.join(HERE, f"cmyk_8x6.jpg.c{channels}.txt"), "w") as f:
        f.write("uint8\n" + " ".join(map(str, rgb.shape)) + "\n" +
                " ".join(map(str, rgb.reshape(-1).tolist())) + "\n")
print("shape", rgb.shape)
