#!/usr/bin/env python3
"""Golden data for the xd-rope scheme, recomputed outside RopeScope from HunyuanVL's own code paths, read and
re-expressed in numpy, not imported (this machine has neither vLLM nor PyTorch for Python):

- positions: vLLM's HunYuanVLForConditionalGeneration.get_xdrope_input_positions
  (vllm/model_executor/models/hunyuan_vision.py). Four rows [p, w, h, t] start as arange(L). For each image-start
  token, the grid begins two tokens later (the start token, then the span's first image token); its
  h * (w + 1) tokens get w = column 0..w (w being the row's newline token), h = row, t = the image's number. The
  span's last image token and the end token keep arange. The prompt has h * (w + 1) + 2 image tokens per image
  (vllm/transformers_utils/processors/hunyuan_vl.py: num_image_tokens = patch_h * (patch_w + 1) + 2).
  Upstream vLLM has no video path; HunyuanVL's own vLLM branch places a video (a video-start token before the
  first frame's image-start) as one span per temporal patch, frame k at t = (spans so far) + k, which is the
  image rule with t counting every image and frame. This script follows that, so a video's frames are spans.
- the axis order: both build position_ids as stack([p, w, h, t]), and XDRotaryEmbedding.forward_native splits
  the 64 frequencies by xdrope_section [16, 16, 16, 16], section i taking row i; transformers' HunYuanVL
  (apply_rotary_pos_emb_xdrope) does the same on cat(freqs, freqs) with the sections doubled, half-split pairs
  (rotate_half). So frequencies 0-15 (the highest) follow p, 16-31 w, 32-47 h, 48-63 t. A docstring elsewhere says
  (base, t, h, w); the code that builds and applies the ids says (p, w, h, t).
- the base: DynamicNTKAlphaRotaryEmbedding, theta * alpha ** (d / (d - 2)), HunyuanOCR's theta 1e4, alpha 1000.

RopeScope's layout names merged grids; the image-start and image-end tokens are text there (they surround the
span), and the span's h * (w + 1) + 2 tokens are the image segment. Writes reference.json beside this script;
tests/unit/test_xd_rope.cpp reads it.
"""
import json
import os

import numpy as np

TEXT, IM_START, IM_END, IMAGE, VIDEO_START, VIDEO_END = 1, 120118, 120119, 120120, 120122, 120123


def xdrope_positions(ids, grids):
    """get_xdrope_input_positions over token ids; grids: one (h, w) per image or frame span, in order."""
    ids = np.asarray(ids)
    n = len(ids)
    p, w_idx, h_idx, t_idx = (np.arange(n) for _ in range(4))
    starts = np.where(ids == IM_START)[0]
    for span, start in enumerate(starts):
        h, w = grids[span]
        pos = start + 2  # the start token, then the span's first image token
        count = (w + 1) * h
        w_idx[pos:pos + count] = np.tile(np.arange(w + 1), h)
        h_idx[pos:pos + count] = np.repeat(np.arange(h), w + 1)
        t_idx[pos:pos + count] = span
    return np.stack([p, w_idx, h_idx, t_idx])


def sequence(spec):
    """Token ids, span grids and the RopeScope layout of [("text", n) | ("image", h, w) | ("frame", h, w)].
    A text run before a span ends with the start token (and, before a video's first frame, the video-start
    token); a text run after a span begins with the end token, so text runs around spans are long enough."""
    ids, grids, layout = [], [], []
    for i, item in enumerate(spec):
        before = spec[i + 1] if i + 1 < len(spec) else None
        after = spec[i - 1] if i > 0 else None
        if item[0] == "text":
            run = [TEXT] * item[1]
            if after is not None and after[0] != "text":
                run[0] = IM_END
            if before is not None and before[0] != "text":
                run[-1] = IM_START
                if before[0] == "frame" and len(before) > 3 and before[3] == "first":
                    run[-2] = VIDEO_START
            ids += run
            layout.append("text:%d" % item[1])
        else:
            h, w = item[1], item[2]
            ids += [IMAGE] * (h * (w + 1) + 2)
            grids.append((h, w))
            layout.append(("image:%dx%d" if item[0] == "image" else "video:1x%dx%d") % (h, w))
    return ids, grids, ",".join(layout)


CASES = {
    "image": [("text", 3), ("image", 2, 3), ("text", 4)],
    "two_images": [("text", 2), ("image", 2, 3), ("text", 3), ("image", 4, 2), ("text", 2)],
    # A video of three temporal patches: each its own span, separated by its end and the next start token.
    "video": [("text", 3), ("frame", 2, 2, "first"), ("text", 2), ("frame", 2, 2), ("text", 2), ("frame", 2, 2), ("text", 3)],
    "image_and_video": [("text", 2), ("image", 1, 3), ("text", 3), ("frame", 2, 3, "first"), ("text", 2), ("frame", 2, 3), ("text", 2)],
    "text_only": [("text", 12)],
}


def sections(head_dim=128, xdrope_section=(16, 16, 16, 16)):
    """Per output dim of cos/sin: (axis, frequency). transformers' form: the sections doubled over
    cat(freqs, freqs), chunk i taking axis i % 4."""
    half = head_dim // 2
    doubled = list(xdrope_section) * 2
    dims, start = [], 0
    for i, size in enumerate(doubled):
        for d in range(start, start + size):
            dims.append((i % len(xdrope_section), d % half))
        start += size
    assert start == head_dim
    # vLLM's form: the 64 frequencies split by the sections, section i from row i; the same per frequency.
    per_frequency = [i for i, size in enumerate(xdrope_section) for _ in range(size)]
    assert all(per_frequency[f] == a for a, f in dims)
    return dims


def main():
    out = {"cases": {}}
    for name, spec in CASES.items():
        ids, grids, layout = sequence(spec)
        pos = xdrope_positions(ids, grids)
        out["cases"][name] = {"layout": layout, "input_ids": [int(x) for x in ids], "positions": pos.astype(int).tolist()}
    theta, alpha, head_dim = 1e4, 1000.0, 128
    out["rotary"] = {"head_dim": head_dim, "xdrope_section": [16, 16, 16, 16], "theta": theta, "alpha": alpha,
                     "base": theta * alpha ** (head_dim / (head_dim - 2)),
                     "dims": [{"dim": d, "axis": a, "frequency": f} for d, (a, f) in enumerate(sections(head_dim))]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
