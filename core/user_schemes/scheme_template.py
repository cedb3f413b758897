{{DOCSTRING}}
import sys

import numpy as np

SCHEME = {{SCHEME}}
# name: (default, min, max). RopeScope turns these into sliders; positions() receives them as keywords.
PARAMETERS = {{PARAMETERS}}
COMPONENTS = {{COMPONENTS}}
# Fixed settings of this export (edit them here).
{{CONSTANTS}}

TWO_PI = 6.283185307179586476925286766559


def _grid(segment):
    """Row and column of each token of one frame, row-major, as float64."""
    r, c = np.meshgrid(np.arange(segment.rows, dtype=np.float64), np.arange(segment.cols, dtype=np.float64), indexing="ij")
    return r.ravel(), c.ravel()


def _text(out, start, length, first):
    """A run of text tokens at first, first + 1, ... on every component."""
    out[:, start:start + length] = first + np.arange(length, dtype=np.float64)


#@rule hard
def _place(layout, out):
    # One index: the token's place in the sequence.
    out[0, :] = np.arange(layout.tokens, dtype=np.float64)
#@end

#@rule unordered
def _place(layout, out):
    # One index; every token of a frame shares the frame's index.
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        per = s.rows * s.cols
        for f in range(s.frames):
            out[0, s.start + f * per:s.start + (f + 1) * per] = nxt + f
        nxt += s.frames
#@end

#@rule mrope compact
def _tau(frame, second_per_grid, tokens_per_second):
    if TEMPORAL == "qwen2vl":
        return frame
    return int(np.floor(frame * second_per_grid * tokens_per_second))


def _place(layout, out, second_per_grid, tokens_per_second):
    # M-RoPE (Qwen2-VL's get_rope_index): text on the diagonal; an image at (s + tau(f), s + r, s + c) with s the
    # largest component so far. COMPACT: each axis resumes after its own last value instead.
    nxt = np.zeros(3)
    for s in layout.segments:
        if s.kind == "text":
            out[:, s.start:s.start + s.length] = nxt[:, None] + np.arange(s.length, dtype=np.float64)
            nxt = nxt + s.length
            continue
        start = nxt if COMPACT else np.full(3, nxt.max())
        r, c = _grid(s)
        per = s.rows * s.cols
        last_tau = 0
        for f in range(s.frames):
            last_tau = _tau(f, second_per_grid, tokens_per_second)
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = start[0] + float(last_tau)
            out[1, block] = start[1] + r
            out[2, block] = start[2] + c
        last = np.array([start[0] + float(last_tau), start[1] + s.rows - 1, start[2] + s.cols - 1])
        nxt = last + 1 if COMPACT else np.full(3, last.max() + 1)
#@end

#@rule circle
def _unit(v):
    return v / np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _plane_basis(text_vector_wht):
    """The ring's plane: orthogonal to the text axis (given in w, h, t order, as the official code)."""
    v = np.asarray(text_vector_wht, dtype=np.float64)
    n = _unit(v / np.abs(v).max())
    if abs(n[0]) < 1e-6 and abs(n[1]) < 1e-6:
        return np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    u = _unit(np.array([-n[1], n[0], 0.0]))
    w = _unit(np.array([n[1] * u[2] - n[2] * u[1], n[2] * u[0] - n[0] * u[2], n[0] * u[1] - n[1] * u[0]]))
    return u, w


def _circle_offsets(rows, cols, alpha, radius):
    """Circle-RoPE's ring for one H x W grid, (t, h, w) offsets per token (row-major)."""
    half_w, half_h = (cols - 1) / 2.0, (rows - 1) / 2.0
    if RADIUS_MODE == "auto":        # the paper's auto-k: k * max ||(x, y)||
        radius = radius * np.hypot(half_w, half_h)
    elif RADIUS_MODE == "code-auto":  # the official code's auto-k: k * max coordinate
        radius = radius * max(half_w, half_h)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    raw = np.arctan2(r - half_h, c - half_w).ravel()
    lo, span = raw.min(), raw.max() - raw.min()
    sa = (raw - lo) / span * TWO_PI if span > 0 else raw        # spatial-origin angle
    n = rows * cols
    ga = TWO_PI * np.arange(n, dtype=np.float64) / n            # grid-index angle
    theta = alpha * sa + (1.0 - alpha) * ga
    x, y = radius * np.cos(theta), radius * np.sin(theta)
    u, v = _plane_basis(TEXT_VECTOR)
    wht = [x * u[i] + y * v[i] for i in range(3)]
    return np.stack([wht[2], wht[1], wht[0]])  # (t, h, w)


def _place(layout, out, alpha, radius, stride):
    # Circle-RoPE: each frame's tokens on a ring orthogonal to the text axis, centred at the index the first visual
    # token would take (frame f's ring moved f * stride along (1, 1, 1)); text resumes after the largest position.
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        ring = _circle_offsets(s.rows, s.cols, alpha, radius)
        per = s.rows * s.cols
        top = -np.inf
        for f in range(s.frames):
            block = ring + (nxt + f * stride)
            out[:, s.start + f * per:s.start + (f + 1) * per] = block
            top = max(top, block.max())
        nxt = top + 1
#@end

#@rule vrope
def _place(layout, out):
    # VRoPE: four symmetric diagonals from the frame's corners; frames stacked along the text axis.
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        H, W = s.rows, s.cols
        h, w = _grid(s)
        per = H * W
        for f in range(s.frames):
            base = nxt + float(f) * (H + W - 1)
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = base + h + w
            out[1, block] = base + h + (W - 1 - w)
            out[2, block] = base + (H - 1 - h) + w
            out[3, block] = base + (H - 1 - h) + (W - 1 - w)
        nxt = nxt + float(s.frames) * (H + W - 1)
#@end

#@rule videorope hope videorope++
def _place(layout, out, temporal_stride):
    # VideoRoPE: frame f at t = s + delta f, its grid on the diagonal through t, centred. HOPE: t set to 0 (the
    # temporal channels at zero frequency).
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        hc, wc = (s.rows - 1) // 2, (s.cols - 1) // 2
        r, c = _grid(s)
        per = s.rows * s.cols
        for f in range(s.frames):
            tf = nxt + temporal_stride * f
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = tf
            out[1, block] = tf + r - hc
            out[2, block] = tf + c - wc
        nxt = nxt + temporal_stride * (s.frames - 1) + 1
    if HOPE:
        out[0, :] = 0.0
#@end

#@rule v2pe
def _place(layout, out, visual_stride):
    # V2PE: text advances by 1, a visual segment of N tokens by visual_stride / N per token.
    last = -1.0
    for s in layout.segments:
        if s.kind == "text":
            out[0, s.start:s.start + s.length] = last + np.arange(1, s.length + 1, dtype=np.float64)
            last += s.length
            continue
        n = s.length
        out[0, s.start:s.start + n] = last + visual_stride * np.arange(1, n + 1, dtype=np.float64) / float(n)
        last = float(np.ceil(out[0, s.start + n - 1]))
#@end

#@rule omnirope ilrope spatial-reset
def _place(layout, out, temporal_stride):
    # Spatial reset: a visual segment's frame f, row r, col c at (s + delta f, r, c). OmniRoPE / ILRoPE move on by
    # max((T-1) delta + 1, H, W); MRoPE-I with spatial reset by max((T-1) delta, H-1, W-1) + 1.
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        r, c = _grid(s)
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = nxt + temporal_stride * f
            out[1, block] = r
            out[2, block] = c
        if RESET_RULE == "omnirope":
            nxt = nxt + max(temporal_stride * (s.frames - 1) + 1, float(s.rows), float(s.cols))
        else:
            nxt = nxt + max(temporal_stride * (s.frames - 1), float(s.rows - 1), float(s.cols - 1)) + 1
#@end

#@rule ernie-vl
def _place(layout, out):
    # ERNIE-4.5-VL: one span per image or video, frame f at (s + f, s + r, s + c); the text after it resumes at
    # s + max(H, W), whatever the number of frames.
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        r, c = _grid(s)
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = nxt + f
            out[1, block] = nxt + r
            out[2, block] = nxt + c
        nxt += max(s.rows, s.cols)
#@end

#@rule mrope-i mhrope glm-v
def _place(layout, out):
    # MRoPE-I (Qwen3-VL) and GLM-V: M-RoPE's placement with every frame its own one-frame grid; the next frame
    # (and the text after the last) at s + max(H, W).
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        r, c = _grid(s)
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = nxt
            out[1, block] = nxt + r
            out[2, block] = nxt + c
            nxt += max(s.rows, s.cols)
#@end

#@rule xd-rope
def _place(layout, out):
    # XD-RoPE (HunyuanVL), rows (p, w, h, t): every axis at the token's index, except on an image's grid, where w is
    # the column, h the row (both from 0) and t the image's number (every video frame its own span). p is never
    # touched. Without the newline column: a scheme file places the layout's own tokens.
    out[:, :] = np.arange(layout.tokens, dtype=np.float64)
    spans = 0
    for s in layout.segments:
        if s.kind == "text":
            continue
        r, c = _grid(s)
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[1, block] = c
            out[2, block] = r
            out[3, block] = spans
            spans += 1
#@end

#@rule tad-rope
def _place(layout, out, temporal_stride):
    # TAD-RoPE: the 1-D index plus gamma x the time index (frames counted through the sequence).
    tau = 0.0
    for s in layout.segments:
        if s.kind == "text":
            out[0, s.start:s.start + s.length] = np.arange(s.start, s.start + s.length, dtype=np.float64) + temporal_stride * tau
            continue
        per = s.rows * s.cols
        for f in range(s.frames):
            first = s.start + f * per
            out[0, first:first + per] = np.arange(first, first + per, dtype=np.float64) + temporal_stride * (tau + f)
        tau += s.frames - 1
#@end

#@rule mm-rope
def _place(layout, out, temporal_stride, scale_t, scale_h, scale_w):
    # MM-RoPE (Lumos-1): M-RoPE's placement with the visual offsets scaled per axis.
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            _text(out, s.start, s.length, nxt)
            nxt += s.length
            continue
        r, c = _grid(s)
        per = s.rows * s.cols
        for f in range(s.frames):
            block = slice(s.start + f * per, s.start + (f + 1) * per)
            out[0, block] = nxt + scale_t * temporal_stride * f
            out[1, block] = nxt + scale_h * r
            out[2, block] = nxt + scale_w * c
        nxt = nxt + max(scale_t * temporal_stride * (s.frames - 1), scale_h * (s.rows - 1), scale_w * (s.cols - 1)) + 1
#@end


def positions(layout, **params):
    """Positions of every token of `layout`: a float64 array [C, L]."""
    values = {name: spec[0] for name, spec in PARAMETERS.items()}
    values.update(params)
    out = np.zeros((len(COMPONENTS), layout.tokens), dtype=np.float64)
    _place(layout, out, **values)
    return out

{{ALLOCATION}}

# --- Without RopeScope: layouts from a spec or from transformers' inputs ------------------------------------------

class Segment:
    def __init__(self, kind, start, length, frames=1, rows=0, cols=0):
        self.kind, self.start, self.length, self.frames, self.rows, self.cols = kind, start, length, frames, rows, cols


class Layout:
    """What RopeScope passes to positions(): segments in order and the token count."""

    def __init__(self, segments):
        self.segments, start = [], 0
        for kind, length, frames, rows, cols in segments:
            self.segments.append(Segment(kind, start, length, frames, rows, cols))
            start += length
        self.tokens = start


def layout_from_spec(spec):
    """"text:4,image:3x3,video:2x3x3" as RopeScope writes layouts (grids after the 2 x 2 merge)."""
    segments = []
    for part in spec.split(","):
        kind, _, size = part.strip().partition(":")
        dims = [int(d) for d in size.split("x")]
        if kind == "text":
            segments.append(("text", dims[0], 0, 0, 0))
        elif kind == "image":
            segments.append(("image", dims[0] * dims[1], 1, dims[0], dims[1]))
        elif kind == "video":
            segments.append(("video", dims[0] * dims[1] * dims[2], dims[0], dims[1], dims[2]))
        else:
            raise ValueError("unknown segment %r" % part)
    return Layout(segments)


def layout_from_ids(input_ids, image_grid_thw=None, video_grid_thw=None, spatial_merge_size=2,
                    image_token_id=151655, video_token_id=151656):
    """One sequence's layout from transformers' inputs: runs of image / video tokens are visual segments, with their
    grids (before the merge, as the processor returns them) taken in order."""
    ids = np.asarray(input_ids).reshape(-1)
    images = [] if image_grid_thw is None else [tuple(int(x) for x in g) for g in np.asarray(image_grid_thw).reshape(-1, 3)]
    videos = [] if video_grid_thw is None else [tuple(int(x) for x in g) for g in np.asarray(video_grid_thw).reshape(-1, 3)]
    segments, i = [], 0
    while i < len(ids):
        token = int(ids[i])
        if token in (image_token_id, video_token_id):
            t, h, w = (images if token == image_token_id else videos).pop(0)
            h, w = h // spatial_merge_size, w // spatial_merge_size
            segments.append(("image" if token == image_token_id else "video", t * h * w, t, h, w))
            i += t * h * w
            continue
        j = i
        while j < len(ids) and int(ids[j]) not in (image_token_id, video_token_id):
            j += 1
        segments.append(("text", j - i, 0, 0, 0))
        i = j
    return Layout(segments)


def get_rope_index(input_ids, image_grid_thw=None, video_grid_thw=None, attention_mask=None, spatial_merge_size=2,
                   image_token_id=151655, video_token_id=151656, **params):
    """transformers' get_rope_index contract: position_ids [C, B, L] and rope_deltas [B, 1] for a batch of input_ids
    [B, L] (padding, where attention_mask is 0, keeps position 1 as transformers does). Images and videos are taken in
    order across the batch, as the processor lists their grids."""
    ids = np.asarray(input_ids)
    if ids.ndim == 1:
        ids = ids[None, :]
    mask = np.ones_like(ids) if attention_mask is None else np.asarray(attention_mask)
    images = None if image_grid_thw is None else list(np.asarray(image_grid_thw).reshape(-1, 3))
    videos = None if video_grid_thw is None else list(np.asarray(video_grid_thw).reshape(-1, 3))
    position_ids = np.ones((len(COMPONENTS), ids.shape[0], ids.shape[1]), dtype=np.float64)
    deltas = np.zeros((ids.shape[0], 1), dtype=np.float64)
    for b in range(ids.shape[0]):
        kept = ids[b][mask[b] == 1]
        n_images = int(np.sum(np.diff(np.r_[0, kept == image_token_id].astype(int)) == 1))
        n_videos = int(np.sum(np.diff(np.r_[0, kept == video_token_id].astype(int)) == 1))
        mine_i, mine_v = (images or [])[:n_images], (videos or [])[:n_videos]
        images, videos = (images or [])[n_images:], (videos or [])[n_videos:]
        layout = layout_from_ids(kept, mine_i, mine_v, spatial_merge_size, image_token_id, video_token_id)
        p = positions(layout, **params)
        position_ids[:, b, mask[b] == 1] = p
        deltas[b, 0] = p.max() + 1 - len(kept)
    return position_ids, deltas


if __name__ == "__main__":
    # python3 this_file.py LAYOUT [name=value ...]: one line per component, every position in full precision.
    params = dict((k, float(v)) for k, v in (a.split("=", 1) for a in sys.argv[2:]))
    for row in positions(layout_from_spec(sys.argv[1]), **params):
        print(" ".join(repr(float(x)) for x in row))
