"""Images on a sphere: each image's tokens sit on a sphere centred on the text axis, row r at latitude
pi (r + 1/2) / H and column c at longitude 2 pi c / W, so every patch is the same distance from the sphere's
centre (the point the text would reach next) while rows and columns stay apart. Text runs along the diagonal
(n, n, n) as in M-RoPE and resumes after the sphere.

Open it in RopeScope (scheme list > Python scheme..., or --scheme examples/schemes/sphere.py) and drag radius.
"""
import numpy as np

PARAMETERS = {
    "radius": (8.0, 0.5, 64.0),     # the sphere's radius, in positions
    "frame_step": (1.0, 0.0, 8.0),  # a video's frame f moves the sphere f * frame_step along the time axis
}
COMPONENTS = ["t", "h", "w"]


def positions(layout, radius, frame_step):
    out = np.zeros((3, layout.tokens))
    nxt = 0.0  # where the next text token goes on every axis
    for s in layout.segments:
        if s.kind == "text":
            out[:, s.start:s.start + s.length] = nxt + np.arange(s.length)
            nxt += s.length
            continue
        r, c = np.meshgrid(np.arange(s.rows), np.arange(s.cols), indexing="ij")
        latitude = np.pi * (r.ravel() + 0.5) / s.rows
        longitude = 2 * np.pi * c.ravel() / s.cols
        centre = nxt + radius  # the sphere touches the last text position
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = centre + radius * np.cos(latitude) + f * frame_step
            out[1, block] = centre + radius * np.sin(latitude) * np.cos(longitude)
            out[2, block] = centre + radius * np.sin(latitude) * np.sin(longitude)
        nxt = out[:, s.start:s.start + s.length].max() + 1
    return out
