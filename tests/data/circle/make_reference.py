#!/usr/bin/env python3
"""Reference Circle-RoPE positions, computed independently of the C++ engine.

Two routes are implemented from their descriptions, in double precision:
  * the paper's Appendix C pseudocode (centre, SA/GA mix, plane rotation), offsets only;
  * the official code's get_rope_index semantics (github lose4578/CircleRoPE): coordinates stacked in
    (w, h, t) order, move_to_origin centring, radius fixed / 'auto-k' = k * max centred coordinate,
    ring added to c = st_idx + text_len, text resuming at max + 1, output ordered (t, h, w).
The script checks the two agree on every image, then writes <case>.csv in the CLI's CSV format.
Paper auto-k (k * max ||(x,y)||) and video frames (centre c + t*stride*(1,1,1)) follow DESIGN.md.
Run: python3 make_reference.py  (pure Python, no packages).
"""
import math

CASES = {
    # name: (layout, alpha, radius spec, text vector (w,h,t), stride)
    "default_8x8": ("text:4,image:8x8,text:6", 0.5, "10", (1, 1, 1), 1.0),
    "two_images_code_auto": ("text:3,image:3x4,text:2,image:2x2,text:1", 0.3, "code-auto-2", (1, 1, 1), 1.0),
    "image_first_paper_auto_vector": ("image:5x3,text:2", 1.0, "auto-1.5", (1, 2, 3), 1.0),
    "t_axis_vector": ("text:2,image:4x4,text:2", 0.0, "5", (0, 0, 1), 1.0),
    "video_stride": ("text:2,video:3x2x2,text:1", 0.5, "10", (1, 1, 1), 2.5),
}


def parse(layout):
    segs = []
    for part in layout.split(","):
        kind, size = part.split(":")
        dims = [int(x) for x in size.split("x")]
        if kind == "text":
            segs.append(("text", dims[0]))
        elif kind == "image":
            segs.append(("image", 1, dims[0], dims[1]))
        else:
            segs.append(("video", dims[0], dims[1], dims[2]))
    return segs


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def norm(a):
    return math.sqrt(sum(x * x for x in a))


def basis_official(text_vector):
    n = tuple(x / norm(text_vector) for x in text_vector)
    if abs(n[0]) < 1e-6 and abs(n[1]) < 1e-6:
        return (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)
    u = (-n[1], n[0], 0.0)
    u = tuple(x / norm(u) for x in u)
    v = cross(n, u)
    v = tuple(x / norm(v) for x in v)
    return u, v


def radius_of(spec, H, W):
    cx, cy = (W - 1) / 2, (H - 1) / 2
    if spec.startswith("code-auto"):
        k = float(spec.split("-")[-1])
        return k * max(cx, cy)  # official: max over the centred (w, h, t) coordinates; t centred is 0
    if spec.startswith("auto"):
        k = float(spec.split("-")[-1])
        return k * max(math.hypot(w - cx, h - cy) for h in range(H) for w in range(W))
    return float(spec)


def offsets_official(H, W, alpha, R, text_vector):
    """(w,h,t) offsets per token, row-major, following the official map_to_circle + rotate."""
    # move_to_origin: centre = (max + min) / 2 per axis
    xs = [[w - (W - 1) / 2 for w in range(W)] for _ in range(H)]
    ys = [[h - (H - 1) / 2 for _ in range(W)] for h in range(H)]
    raw = [[math.atan2(ys[h][w], xs[h][w]) for w in range(W)] for h in range(H)]
    lo = min(min(r) for r in raw)
    hi = max(max(r) for r in raw)
    rng = hi - lo
    u, v = basis_official(text_vector)
    out = []
    for h in range(H):
        for w in range(W):
            norm_theta = (raw[h][w] - lo) / rng * 2 * math.pi if rng > 0 else raw[h][w]
            index_theta = (h * W + w) / (H * W) * 2 * math.pi
            theta = alpha * norm_theta + (1 - alpha) * index_theta
            x, y = R * math.cos(theta), R * math.sin(theta)
            out.append(tuple(x * u[i] + y * v[i] for i in range(3)))
    return out


def offsets_appendix_c(H, W, alpha, R, text_vector):
    """The paper's Appendix C pseudocode, C given as (N, 2) = (x=w, y=h) row-major."""
    C = [(w, h) for h in range(H) for w in range(W)]
    centre = [0.5 * (max(c[i] for c in C) + min(c[i] for c in C)) for i in range(2)]
    Cp = [(c[0] - centre[0], c[1] - centre[1]) for c in C]
    raw = [math.atan2(c[1], c[0]) for c in Cp]
    d = max(raw) - min(raw)
    sa = [(r - min(raw)) / d * 2 * math.pi if d > 0 else 0.0 for r in raw]
    N = len(C)
    ga = [k / N * 2 * math.pi for k in range(N)]
    mix = [alpha * a + (1 - alpha) * g for a, g in zip(sa, ga)]
    n = tuple(x / norm(text_vector) for x in text_vector)
    u = (-n[1], n[0], 0.0)
    if norm(u) < 1e-6:
        u = (1.0, 0.0, 0.0)
    u = tuple(x / norm(u) for x in u)
    v = cross(n, u)
    return [tuple(R * math.cos(t) * u[i] + R * math.sin(t) * v[i] for i in range(3)) for t in mix]


def fmt(x):
    if x == 0:
        x = 0.0
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def build(layout, alpha, radius, text_vector, stride):
    rows = []
    nxt = 0.0
    for si, seg in enumerate(parse(layout)):
        if seg[0] == "text":
            for _ in range(seg[1]):
                rows.append((len(rows), "text", si, "", "", "", (nxt, nxt, nxt)))
                nxt += 1
            continue
        kind, T, H, W = seg
        R = radius_of(radius, H, W)
        ring = offsets_official(H, W, alpha, R, text_vector)
        paper = offsets_appendix_c(H, W, alpha, R, text_vector)
        for a, b in zip(ring, paper):
            assert all(abs(a[i] - b[i]) < 1e-12 for i in range(3)), "official and Appendix C disagree"
        c = nxt
        seg_max = -math.inf
        for t in range(T):
            centre = c + t * stride
            for k, (dw, dh, dt) in enumerate(ring):
                p = (centre + dt, centre + dh, centre + dw)  # (t, h, w)
                seg_max = max(seg_max, *p)
                rows.append((len(rows), kind, si, t, k // W, k % W, p))
        nxt = seg_max + 1
    return rows


if __name__ == "__main__":
    for name, (layout, alpha, radius, vector, stride) in CASES.items():
        with open(name + ".csv", "w") as f:
            f.write("# layout=%s alpha=%s radius=%s text-vector=%s stride=%s\n"
                    % (layout, alpha, radius, ",".join(map(str, vector)), stride))
            f.write("index,modality,segment,frame,row,col,p0,p1,p2\n")
            for i, m, s, fr, r, c, p in build(layout, alpha, radius, vector, stride):
                f.write("%d,%s,%d,%s,%s,%s,%s\n" % (i, m, s, fr, r, c, ",".join(fmt(x) for x in p)))
