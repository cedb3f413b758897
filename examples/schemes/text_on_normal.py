"""Text on the image plane's normal: an image lies flat in the (h, w) plane at one time position, centred on
the text axis, and the text runs along that plane's normal (the t axis) through the image's centre. Every
patch is then equally far, in time, from the text before it, and its (h, w) offset is what tells patches
apart: the opposite of M-RoPE's diagonal text, which leaves the image's top-left corner nearest.

Two parameters: how far apart patches are in the plane (grid_scale), and how far the text stands off the
plane (gap).
"""
import numpy as np

PARAMETERS = {
    "grid_scale": (1.0, 0.1, 8.0),
    "gap": (1.0, 0.0, 32.0),
}
COMPONENTS = ["t", "h", "w"]


def positions(layout, grid_scale, gap):
    out = np.zeros((3, layout.tokens))
    t = 0.0  # the text axis is (t, 0, 0): h and w stay 0 for text
    for s in layout.segments:
        if s.kind == "text":
            out[0, s.start:s.start + s.length] = t + np.arange(s.length)
            t += s.length
            continue
        r, c = np.meshgrid(np.arange(s.rows), np.arange(s.cols), indexing="ij")
        h = (r.ravel() - (s.rows - 1) / 2) * grid_scale  # centred on the text axis
        w = (c.ravel() - (s.cols - 1) / 2) * grid_scale
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = t + gap + f  # each frame its own plane, one step further along the normal
            out[1, block] = h
            out[2, block] = w
        t += gap + s.frames - 1 + gap
    return out
