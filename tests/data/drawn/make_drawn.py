#!/usr/bin/env python3
"""Pictures as a user would draw them for the bundled models, with another program (ImageMagick's own
rasteriser and antialiasing): objects anywhere (not on the 8x8 token grid, often across two tokens), sizes
14-36 px, other shades, and a pastel background made by bilinear interpolation of four corner colours that
keeps the bundled task's one cue (redder to the right, bluer downwards). Writes drawn_NN.png and
questions.jsonl (image, question, answer, type) here. Needs ImageMagick's `convert`; run it once, the
outputs are committed: python3 tests/data/drawn/make_drawn.py"""
import json, os, random, subprocess

SHAPES = ["circle", "square", "triangle", "diamond"]
COLOURS = {"red": (225, 35, 35), "green": (45, 165, 65), "blue": (35, 75, 225), "yellow": (240, 205, 35), "purple": (145, 55, 185)}
QUADRANTS = ["topleft", "topright", "bottomleft", "bottomright"]
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six"]
here = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261123)


def hexcolour(c):
    return "#%02x%02x%02x" % tuple(max(0, min(255, v)) for v in c)


def primitive(shape, x, y, r):
    if shape == "circle":
        return "circle %.1f,%.1f %.1f,%.1f" % (x, y, x + r, y)
    if shape == "square":
        return "rectangle %.1f,%.1f %.1f,%.1f" % (x - r, y - r, x + r, y + r)
    if shape == "triangle":
        return "polygon %.1f,%.1f %.1f,%.1f %.1f,%.1f" % (x, y - r, x + r, y + r, x - r, y + r)
    return "polygon %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" % (x, y - r, x + r, y, x, y + r, x - r, y)


lines = []
for n in range(16):
    count = rng.randint(2, 4)
    objects = []
    while len(objects) < count:
        shape, colour = rng.choice(SHAPES), rng.choice(list(COLOURS))
        r = rng.uniform(7, 18)
        # Clear of the middle lines (so "where" has one answer) and of the other objects.
        x, y = rng.uniform(r + 2, 222 - r), rng.uniform(r + 2, 222 - r)
        if abs(x - 112) < r + 4 or abs(y - 112) < r + 4:
            continue
        if any(o[0] == shape and o[1] == colour for o in objects):
            continue
        if any(((x - o[2]) ** 2 + (y - o[3]) ** 2) ** 0.5 < 1.5 * (r + o[4]) + 4 for o in objects):
            continue
        objects.append((shape, colour, x, y, r))
    red0, blue0 = rng.uniform(195, 222), rng.uniform(195, 222)
    red1, blue1 = min(255, red0 + rng.uniform(28, 50)), min(255, blue0 + rng.uniform(28, 50))
    green = rng.uniform(210, 240)
    corners = [(0, 0, (red0, green, blue0)), (223, 0, (red1, green, blue0)), (0, 223, (red0, green, blue1)), (223, 223, (red1, green, blue1))]
    sparse = " ".join("%d,%d %s" % (cx, cy, hexcolour(tuple(int(v) for v in c))) for cx, cy, c in corners)
    name = "drawn_%02d.png" % n
    cmd = ["convert", "-size", "224x224", "xc:white", "-sparse-color", "Bilinear", sparse]
    for shape, colour, x, y, r in objects:
        base = COLOURS[colour]
        fill = tuple(v + rng.randint(-25, 25) for v in base)
        cmd += ["-fill", hexcolour(fill), "-stroke", "none", "-draw", primitive(shape, x, y, r)]
    cmd += ["-depth", "8", "-strip", "PNG24:" + os.path.join(here, name)]
    subprocess.run(cmd, check=True)

    def quadrant(o):
        return QUADRANTS[(2 if o[3] >= 112 else 0) + (1 if o[2] >= 112 else 0)]

    questions = []
    for o in objects:
        shape, colour = o[0], o[1]
        if sum(p[0] == shape for p in objects) == 1:
            questions.append(("what colour is the " + shape, colour, "colour"))
            questions.append(("where is the " + shape, quadrant(o), "where"))
        if sum(p[1] == colour for p in objects) == 1:
            questions.append(("what shape is " + colour, shape, "shape"))
    shape = rng.choice(objects)[0]
    questions.append(("how many " + shape + "s", NUMBERS[sum(p[0] == shape for p in objects)], "count"))
    colour = rng.choice(objects)[1]
    questions.append(("how many are " + colour, NUMBERS[sum(p[1] == colour for p in objects)], "count"))
    for q, a, t in questions:
        lines.append(json.dumps({"image": name, "question": q, "answer": a, "type": t}))

with open(os.path.join(here, "questions.jsonl"), "w") as f:
    f.write("\n".join(lines) + "\n")
print(len(lines), "questions on 16 pictures")
