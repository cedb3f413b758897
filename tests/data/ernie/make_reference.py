#!/usr/bin/env python3
"""Golden data for the ernie-vl scheme, recomputed outside RopeScope from ERNIE-4.5-VL's own code paths in
huggingface/transformers (src/transformers/models/ernie4_5_vl_moe/modeling_ernie4_5_vl_moe.py), read and
re-expressed in numpy, not imported (this machine has no PyTorch for Python):

- positions: Ernie4_5_VLMoeModel.get_rope_index walks the token types in groups (itertools.groupby over
  mm_token_type_ids): text gets current_pos, current_pos + 1, ...; an image (type 1) or video (type 2) group gets
  get_vision_position_ids(current_pos, grid_thw, t_merge (1 for images, temporal_merge_size 2 for videos),
  spatial_merge 2), then current_pos += max(grid_h, grid_w) // spatial_merge. get_vision_position_ids is the
  fixed one of huggingface/transformers#45400 (meshgrid of t = arange(grid_t // t_merge) * time_interval +
  start, h = start + arange(grid_h // 2), w = start + arange(grid_w // 2)); 5.3's version gave every temporal
  patch t = start (the regression #45381), which this data must not encode.
- the rotary: Ernie4_5_VLMoeTextRotaryEmbedding pre-rotates inv_freq (the hw part's even frequencies, then its
  odd ones), and recomposition_to_3d splits by mrope_section [22, 22, 20], takes h, w and t from position rows
  1, 2, 0, interleaves h and w, appends t, and repeat_interleave(2)s the result onto adjacent dims (2j, 2j+1).
  Run symbolically here: each entry carries (axis, original frequency) instead of an angle.

Writes reference.json beside this script. RopeScope's test (tests/unit/test_ernie_vl.cpp) reads it.
"""
import itertools
import json
import os

import numpy as np

SPATIAL, TEMPORAL = 2, 2


def vision_position_ids(start, grid_thw, t_merge):
    t, h, w = grid_thw
    lt, lh, lw = t // t_merge, h // SPATIAL, w // SPATIAL
    tt, hh, ww = np.meshgrid(np.arange(lt) * 1 + start, np.arange(lh) + start, np.arange(lw) + start, indexing="ij")
    return np.stack([tt.ravel(), hh.ravel(), ww.ravel()])


def rope_index(types, image_grids, video_grids):
    grids = {1: iter(image_grids), 2: iter(video_grids)}
    current, parts = 0, []
    for key, group in itertools.groupby(enumerate(types), lambda x: x[1]):
        group = list(group)
        n = group[-1][0] + 1 - group[0][0]
        if key == 0:
            parts.append(np.tile(np.arange(n) + current, (3, 1)))
            current += n
        else:
            g = next(grids[key])
            parts.append(vision_position_ids(current, g, 1 if key == 1 else TEMPORAL))
            current += max(g[1], g[2]) // SPATIAL
    return np.concatenate(parts, axis=1)


def sequence(spec):
    """A token-type sequence and grids from [("text", n) | ("image", h, w) | ("video", t, h, w)] (merged units),
    and the same as a RopeScope layout string. Adjacent visual segments get their own groups only when text
    separates them, as in a real prompt."""
    types, images, videos, layout = [], [], [], []
    for item in spec:
        if item[0] == "text":
            types += [0] * item[1]
            layout.append("text:%d" % item[1])
        elif item[0] == "image":
            _, h, w = item
            types += [1] * (h * w)
            images.append((1, h * SPATIAL, w * SPATIAL))
            layout.append("image:%dx%d" % (h, w))
        else:
            _, t, h, w = item
            types += [2] * (t * h * w)
            videos.append((t * TEMPORAL, h * SPATIAL, w * SPATIAL))
            layout.append("video:%dx%dx%d" % (t, h, w))
    return types, images, videos, ",".join(layout)


CASES = {
    "image": [("text", 3), ("image", 2, 3), ("text", 4)],
    "two_images": [("text", 2), ("image", 2, 3), ("text", 3), ("image", 4, 3), ("text", 2)],
    "video": [("text", 3), ("video", 3, 2, 2), ("text", 4)],
    "long_video": [("text", 2), ("video", 6, 2, 3), ("text", 5)],  # T > max(H, W): text reuses t values
    "text_only": [("text", 12)],
    "image_first": [("image", 3, 3), ("text", 5)],
}


def recomposition(head_dim=128, mrope_section=(22, 22, 20)):
    """Per output dim of cos/sin: (axis, original frequency). Axes: 0 t, 1 h, 2 w (position rows)."""
    half = head_dim // 2
    freq = np.arange(half)
    hw, t = mrope_section[0] + mrope_section[1], mrope_section[2]
    pre = np.empty(half, dtype=np.int64)
    pre[:hw] = np.concatenate([freq[:-t][0::2], freq[:-t][1::2]])
    pre[-t:] = freq[-t:]
    # freqs[axis, j] = positions[axis] * inv_freq[pre[j]]: carry (axis, pre[j]) symbolically.
    table = [[(axis, int(pre[j])) for j in range(half)] for axis in range(3)]
    chunks, start = [], 0
    for size in mrope_section:
        chunks.append((start, start + size))
        start += size
    # m[(i + 1) % 3] of the i-th chunk: chunk 0 from axis 1 (h), chunk 1 from axis 2 (w), chunk 2 from axis 0 (t).
    h = [table[1][j] for j in range(*chunks[0])]
    w = [table[2][j] for j in range(*chunks[1])]
    tt = [table[0][j] for j in range(*chunks[2])]
    hw_interleaved = [x for pair in zip(h, w) for x in pair]
    per_frequency = hw_interleaved + tt
    dims = [x for x in per_frequency for _ in range(2)]  # repeat_interleave(2): dims 2j and 2j+1
    return dims


def main():
    out = {"cases": {}, "rotary": {"head_dim": 128, "mrope_section": [22, 22, 20]}}
    for name, spec in CASES.items():
        types, images, videos, layout = sequence(spec)
        pos = rope_index(types, images, videos)
        assert pos.shape[1] == len(types)
        out["cases"][name] = {"layout": layout, "positions": pos.astype(int).tolist(),
                              "rope_deltas": int(pos.max() + 1 - len(types))}
    dims = recomposition()
    out["rotary"]["dims"] = [{"dim": d, "axis": a, "frequency": f} for d, (a, f) in enumerate(dims)]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
