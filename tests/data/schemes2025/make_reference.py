#!/usr/bin/env python3
"""Reference positions and frequency allocations of the 2025 schemes, computed independently of the engine.

Written from the semantics of JJJYmmm/Multimodal-RoPEs (pos_design/videorope.py, hope.py, v2pe.py,
omnirope.py (ilrope.py calls it), mrope_i.py with and without spatial_reset (mhrope uses it too), mmrope.py,
and freq_allocation/videorope.py, hope.py, mrope_i.py, mhrope.py, mmrope.py), VideoRoPE++'s own
rotary_embedding.py ('videorope++_v1': the time section on the NTK-scaled base) and TC-LLaVA's TAD-RoPE
(index + gamma x frame index), in double precision: the token sequence is walked block by block
as their get_*_index functions do (text run, then one visual grid), not segment by segment as the engine
does. Videos are one (T, H, W) grid in the base cases; the *_split cases walk the references' own form (their
get_*_index split video_grid_thw into one-frame grids for every scheme), which `--video split` asks for, and
mrope-i / mhrope (split by default) also get *_grid cases (M-RoPE's walk of the whole grid).
HoPE's rotary sees t = 0 (its embedding zeroes the time positions), so that is what the table holds.
Writes <scheme>_<case>.csv in the CLI's CSV format and allocations.json.
Run: python3 make_reference.py  (pure Python, no packages).
"""
import json
import math

CASES = {
    "one_image": "text:3,image:3x4,text:2",
    "two_images": "text:2,image:2x3,text:3,image:4x5,text:2",
    "video3": "text:2,video:3x2x3,text:2",
    "text_only": "text:5",
    "image_first": "image:5x2,text:3",
}
VIDEO_CASES = {
    "video3": "text:2,video:3x2x3,text:2",
    "video_image": "text:1,video:2x3x2,text:2,image:2x2,text:1",
}
SCHEMES = {  # name: (kind, parameter, header)
    "videorope": ("videorope", 2.0, "temporal-stride=2"),
    "videorope_d1.5": ("videorope", 1.5, "temporal-stride=1.5"),
    "hope": ("hope", 1.0, "temporal-stride=1"),
    "hope_d0.75": ("hope", 0.75, "temporal-stride=0.75"),
    "v2pe": ("v2pe", 16.0, "visual-stride=16"),
    "v2pe_s7": ("v2pe", 7.0, "visual-stride=7"),
    "omnirope": ("omnirope", 1.0, "temporal-stride=1"),
    "omnirope_d3": ("omnirope", 3.0, "temporal-stride=3"),
    "ilrope": ("ilrope", 1.0, "temporal-stride=1"),
    "spatial-reset": ("spatial-reset", 1.0, "temporal-stride=1"),
    "spatial-reset_d2": ("spatial-reset", 2.0, "temporal-stride=2"),
    "mrope-i": ("mrope-i", None, ""),
    "mhrope": ("mhrope", None, ""),
    "tad-rope": ("tad-rope", 1.0, "temporal-stride=1"),
    "tad-rope_g0.5": ("tad-rope", 0.5, "temporal-stride=0.5"),
    "videorope++": ("videorope++", 2.0, "ntk-factor=4"),
    "mm-rope": ("mm-rope", (4.0, 8.0, 8.0), "position-scale=4,8,8"),
    "mm-rope_s1-2-3": ("mm-rope", (1.0, 2.0, 3.0), "position-scale=1,2,3"),
}
NTK_ORIGINAL_CONTEXT = 32768  # VideoRoPE++'s post_init fixes max_position_embeddings to this


def blocks(layout):
    """[(text_len_before, T, H, W)] and the trailing text length, as the reference walks input_ids."""
    out, text = [], 0
    for part in layout.split(","):
        kind, size = part.split(":")
        dims = [int(x) for x in size.split("x")]
        if kind == "text":
            text += dims[0]
        else:
            t, h, w = (1, dims[0], dims[1]) if kind == "image" else dims
            out.append((text, t, h, w, kind))
            text = 0
    return out, text


def videorope(layout, delta, hope):
    cols = []  # (t, h, w) per token
    last_t = None
    grids, tail = blocks(layout)
    for text_len, T, H, W, _ in grids:
        st = 0 if last_t is None else last_t + 1
        cols += [(st + i, st + i, st + i) for i in range(text_len)]
        last_t = st + text_len - 1 if text_len else last_t
        s = st + text_len
        block_t = []
        for f in range(T):
            for r in range(H):
                for c in range(W):
                    t = f * delta + s
                    cols.append((t, t + r - (H - 1) // 2, t + c - (W - 1) // 2))
                    block_t.append(t)
        last_t = max(block_t)
    st = 0 if last_t is None else last_t + 1
    cols += [(st + i, st + i, st + i) for i in range(tail)]
    if hope:
        cols = [(0.0 if t > 0 else t, h, w) for t, h, w in cols]
    return cols


def v2pe(layout, stride):
    cols, last = [], -1.0
    grids, tail = blocks(layout)
    for text_len, T, H, W, _ in grids:
        for _ in range(text_len):
            last += 1
            cols.append((last,))
        n = T * H * W
        pos = [last + stride * (k + 1) / n for k in range(n)]
        cols += [(p,) for p in pos]
        last = float(math.ceil(pos[-1]))
    for _ in range(tail):
        last += 1
        cols.append((last,))
    return cols


def spatial_reset(layout, delta):
    cols, shift = [], 0
    grids, tail = blocks(layout)
    for text_len, T, H, W, _ in grids:
        if text_len > 0:
            cols += [(shift + i, shift + i, shift + i) for i in range(text_len)]
            shift = int(shift + text_len - 1) + 1
        for f in range(T):
            for r in range(H):
                for c in range(W):
                    cols.append((f * delta + shift, r, c))
        shift += max((T - 1) * delta + 1, H, W)  # the reference's temporal_extent (cd413b9)
    cols += [(shift + i, shift + i, shift + i) for i in range(tail)]
    return cols


def mrope_reset(layout, delta):
    """mrope_i.py with spatial_reset: the visual block plus the token after it (its <|vision_end|>) at
    s + max((T-1)*delta, H-1, W-1) + 1; every later block starts at the previous block's max + 1. In the
    reference that token is always there; in a layout it is the next text token, if any."""
    out = []  # per token, (t, h, w)
    grids, tail = blocks(layout)
    last_max = None
    pending_end = False  # the next token is the block's <|vision_end|>
    end_value = None
    for text_len, T, H, W, _ in grids:
        st = 0 if last_max is None else last_max + 1
        run = list(range(text_len))
        if pending_end and text_len:
            out.append((end_value,) * 3)  # the first text token plays <|vision_end|>
            run = run[1:]
            st = end_value + 1
        elif pending_end:
            st = end_value + 1  # no token between two segments: the next free index follows the end slot
        out += [(st + i, st + i, st + i) for i in range(len(run))]
        s = st + len(run)
        block = []
        for f in range(T):
            for r in range(H):
                for c in range(W):
                    block.append((s + f * delta, r, c))
        out += block
        end_value = s + max((T - 1) * delta, H - 1, W - 1) + 1
        last_max = max(max(p) for p in block)
        pending_end = True
    if pending_end and tail:
        out.append((end_value,) * 3)
        tail -= 1
        st = end_value + 1
    else:
        st = 0 if last_max is None else last_max + 1
    out += [(st + i, st + i, st + i) for i in range(tail)]
    return out


def mrope_interleave(layout):
    """mrope_i.py without spatial reset: every video frame becomes its own one-frame grid (repeat_interleave
    of video_grid_thw, t = 1); each block starts at the previous max + 1, its t index 0 (t = 1)."""
    out, last_max = [], None
    grids, tail = blocks(layout)
    split = []
    for text_len, T, H, W, kind in grids:
        split.append((text_len, H, W))
        split += [(0, H, W)] * (T - 1)
    for text_len, H, W in split:
        st = 0 if last_max is None else last_max + 1
        out += [(st + i,) * 3 for i in range(text_len)]
        s = st + text_len
        block = [(s, s + r, s + c) for r in range(H) for c in range(W)]
        out += block
        last_max = max(max(p) for p in block)
    st = 0 if last_max is None else last_max + 1
    out += [(st + i,) * 3 for i in range(tail)]
    return out


def mrope_grid(layout):
    """mrope.py's get_rope_index on the unsplit grid: frame f, row r, col c of a block at (s + f, s + r, s + c),
    each block starting at the previous max + 1."""
    out, last_max = [], None
    grids, tail = blocks(layout)
    for text_len, T, H, W, _ in grids:
        st = 0 if last_max is None else last_max + 1
        out += [(st + i,) * 3 for i in range(text_len)]
        s = st + text_len
        block = [(s + f, s + r, s + c) for f in range(T) for r in range(H) for c in range(W)]
        out += block
        last_max = max(max(p) for p in block)
    st = 0 if last_max is None else last_max + 1
    out += [(st + i,) * 3 for i in range(tail)]
    return out


def split_layout(layout):
    """The references' video form: repeat_interleave(video_grid_thw, T) with t = 1, i.e. every video:TxHxW
    becomes T one-frame videos in a row (no text between them in these cases)."""
    parts = []
    for part in layout.split(","):
        kind, size = part.split(":")
        if kind == "video":
            t, h, w = size.split("x")
            parts += [f"video:1x{h}x{w}"] * int(t)
        else:
            parts.append(part)
    return ",".join(parts)


def mm_rope(layout, scale, delta=1.0):
    """mmrope.py on the unsplit grid: offsets (f * delta * st, r * sh, c * sw) + text_len + st_idx, each block
    starting at the previous max + 1."""
    st_, sh, sw = scale
    out, last_max = [], None
    grids, tail = blocks(layout)
    for text_len, T, H, W, _ in grids:
        st = 0 if last_max is None else last_max + 1
        out += [(st + i,) * 3 for i in range(text_len)]
        s = st + text_len
        block = [(s + f * delta * st_, s + r * sh, s + c * sw) for f in range(T) for r in range(H) for c in range(W)]
        out += block
        last_max = max(max(p) for p in block)
    st = 0 if last_max is None else last_max + 1
    out += [(st + i,) * 3 for i in range(tail)]
    return out


def tad_rope(layout, gamma):
    """TAD-RoPE: index i + gamma * tau, tau counting frames through the sequence (a video's frame f at its
    start + f; text and images keep the count reached)."""
    out, tau, i = [], 0, 0
    for part in layout.split(","):
        kind, size = part.split(":")
        dims = [int(x) for x in size.split("x")]
        if kind == "text":
            for _ in range(dims[0]):
                out.append((i + gamma * tau,))
                i += 1
            continue
        T, H, W = (1, dims[0], dims[1]) if kind == "image" else dims
        for f in range(T):
            for _ in range(H * W):
                out.append((i + gamma * (tau + f),))
                i += 1
        tau += T - 1
    return out


def yarn_v_time_theta(theta, head_dim, factor):
    """VideoRoPE++ 'videorope++_v1': ntk_base = base * ((L * factor - 1) / (L - 1)) ** (d / (d - 2))."""
    L = NTK_ORIGINAL_CONTEXT
    return theta * ((L * factor - 1) / (L - 1)) ** (head_dim / (head_dim - 2))


def distributed(half):
    """mmrope.py: pattern (T, T, H, W, H, W, H, W) repeated over the pairs."""
    pattern = (0, 0, 1, 2, 1, 2, 1, 2)
    return [pattern[j % 8] for j in range(half)]


def per_head(heads, sections):
    """mhrope.py: the first sections[0] KV heads on t, then h, then w; the rest zero frequency (-1 here)."""
    table = []
    for axis, n in enumerate(sections):
        table += [axis] * n
    return table + [-1] * (heads - len(table))


def strided_allocation(half, sections, stride):
    """Start from t; h at slice(1, stride*s_h, stride); w at slice(2, stride*s_w, stride):
    freq_allocation/mrope_i.py with stride 3, freq_allocation/videorope.py with stride 2."""
    table = [0] * half
    for j in range(1, min(stride * sections[1], half), stride):
        table[j] = 1
    for j in range(2, min(stride * sections[2], half), stride):
        table[j] = 2
    return table


def interleaved_mrope(half, sections):
    return strided_allocation(half, sections, 3)


def metadata(layout):
    """(modality, segment, frame, row, col) per token, as the CLI prints them."""
    rows = []
    for seg, part in enumerate(layout.split(",")):
        kind, size = part.split(":")
        dims = [int(x) for x in size.split("x")]
        if kind == "text":
            rows += [("text", seg, "", "", "")] * dims[0]
            continue
        t, h, w = (1, dims[0], dims[1]) if kind == "image" else dims
        rows += [(kind, seg, f, r, c) for f in range(t) for r in range(h) for c in range(w)]
    return rows


def number(x):
    return repr(float(x)) if x != int(x) else str(int(x))


def hw_alternating(half, sections):
    return strided_allocation(half, sections, 2)


def positions(kind, value, layout):
    if kind == "v2pe":
        return v2pe(layout, value)
    if kind == "spatial-reset":
        return mrope_reset(layout, value)
    if kind in ("omnirope", "ilrope"):
        return spatial_reset(layout, value)
    if kind in ("mrope-i", "mhrope"):
        return mrope_interleave(layout)
    if kind == "tad-rope":
        return tad_rope(layout, value)
    if kind == "mm-rope":
        return mm_rope(layout, value)
    return videorope(layout, value, kind == "hope")  # videorope, hope, videorope++ (value = delta)


def main():
    for name, (kind, value, header) in SCHEMES.items():
        cases = [(case, layout, None) for case, layout in CASES.items()]
        # --video split for every scheme (the references' own form), and the one grid for the two that split
        # by default; the table keeps the user's layout (its metadata), only the positions follow the form.
        for case, layout in VIDEO_CASES.items():
            cases.append((case + "_split", layout, "split"))
            if kind in ("mrope-i", "mhrope"):
                cases.append((case + "_grid", layout, "grid"))
        for case, layout, form in cases:
            if form == "grid":
                cols = mrope_grid(layout)
            else:
                cols = positions(kind, value, split_layout(layout) if form == "split" else layout)
            meta = metadata(layout)
            assert len(cols) == len(meta)
            extra = " ".join(x for x in (header, f"video={form}" if form else "") if x)
            lines = [f"# scheme={kind} layout={layout}" + (f" {extra}" if extra else ""),
                     "index,modality,segment,frame,row,col," + ",".join(f"p{i}" for i in range(len(cols[0])))]
            for i, (m, p) in enumerate(zip(meta, cols)):
                lines.append(",".join([str(i)] + [str(x) for x in m] + [number(x) for x in p]))
            with open(f"{name}_{case}.csv", "w") as f:
                f.write("\n".join(lines) + "\n")
    allocations = {
        "hw-alternating 128 [16,24,24]": hw_alternating(64, [16, 24, 24]),
        "hw-alternating 32 [4,6,6]": hw_alternating(16, [4, 6, 6]),
        "hw-alternating 64 [8,12,12]": hw_alternating(32, [8, 12, 12]),
        "interleaved-mrope 128 [24,20,20]": interleaved_mrope(64, [24, 20, 20]),
        "interleaved-mrope 32 [6,5,5]": interleaved_mrope(16, [6, 5, 5]),
        "distributed 128 []": distributed(64),
        "distributed 36 []": distributed(18),
        # per-head: "<heads> [t,h,w]" -> each head's axis, -1 without rotary
        "per-head 8 [2,3,3]": per_head(8, [2, 3, 3]),
        "per-head 12 [2,3,3]": per_head(12, [2, 3, 3]),
    }
    time_theta = {
        "videorope++ 1e6 128 4": yarn_v_time_theta(1e6, 128, 4.0),
        "videorope++ 10000 16 2": yarn_v_time_theta(1e4, 16, 2.0),
    }
    with open("allocations.json", "w") as f:
        json.dump(allocations, f, indent=1)
    with open("time_theta.json", "w") as f:
        json.dump(time_theta, f, indent=1)


if __name__ == "__main__":
    main()
