"""Models run through the `ropescope` binary, in a process of its own (so LibTorch never enters the caller's):
forward() on pre-processed inputs and attend() on a picture and a question, their outputs read back as numpy
arrays and dicts, the binary's one-line errors raised as exceptions.

The binary is found at $ROPESCOPE_BINARY, in the build tree beside this package (<build>/bin/ropescope), in this
checkout's build/bin, or on PATH; or pass binary=."""
import csv
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from . import safetensors
from ._lib import InvalidInput, RopeScopeError
from .schemes import _value_text, parameters


def _binary(given):
    if given:
        return given
    if os.environ.get("ROPESCOPE_BINARY"):
        return os.environ["ROPESCOPE_BINARY"]
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, os.pardir, os.pardir, "bin", "ropescope"),
                 os.path.join(here, os.pardir, os.pardir, "build", "bin", "ropescope")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    found = shutil.which("ropescope")
    if not found:
        raise RopeScopeError("the ropescope binary was not found: build it (cmake --build build --target ropescope), or set "
                             "ROPESCOPE_BINARY or pass binary=")
    return found


def _flags(options):
    """Keyword arguments as the binary's flags: a scheme parameter by its row's type (on/off, x,y,z, a number or
    a name; the rotary box's theta and head_dim), a command option True as a bare flag (False and None: left out),
    anything else as its text (a list joined by commas)."""
    rows = {p["key"]: p for p in parameters()}
    args = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if key in rows or key in ("theta", "head_dim"):
            args += [flag, _value_text(key, value)]
        elif value is True:
            args.append(flag)
        elif value is False:
            continue
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def _run(command, args, binary, timeout):
    path = _binary(binary)
    try:
        run = subprocess.run([path, command] + args, capture_output=True, text=True, timeout=timeout)
    except OSError as e:
        raise RopeScopeError("%s: cannot run it (%s)" % (path, e.strerror or e)) from None
    except subprocess.TimeoutExpired:
        raise RopeScopeError("%s %s: no answer within %s s" % (path, command, timeout)) from None
    if run.returncode != 0:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else "%s exited with %d" % (command, run.returncode)
        raise (InvalidInput if run.returncode == 2 else RopeScopeError)(message)
    return run


def forward(model, input_ids, pixel_values=None, image_grid_thw=None, pixel_values_videos=None, video_grid_thw=None,
            mm_token_type_ids=None, *, generate=5, device=None, dtype=None, binary=None, timeout=None, **scheme):
    """`ropescope forward` on one pre-processed prompt (the processor's tensors): returns {name: array} with
    position_ids, rope_deltas, inputs_embeds, decoder_layer_outputs, logits, attentions, generated_ids, ... and
    "metadata" (the scheme, layout and allocation used). scheme: scheme="circle", alpha=0.3, ... as the CLI's flags."""
    inputs = {"input_ids": np.asarray(input_ids, dtype=np.int64).reshape(1, -1)}
    for name, value, kind in (("pixel_values", pixel_values, np.float32), ("image_grid_thw", image_grid_thw, np.int64),
                              ("pixel_values_videos", pixel_values_videos, np.float32), ("video_grid_thw", video_grid_thw, np.int64),
                              ("mm_token_type_ids", mm_token_type_ids, np.int64)):
        if value is not None:
            inputs[name] = np.asarray(value, dtype=kind)
    with tempfile.TemporaryDirectory(prefix="ropescope-") as tmp:
        given, out = os.path.join(tmp, "inputs.safetensors"), os.path.join(tmp, "outputs.safetensors")
        safetensors.save(given, inputs, {"format": "pt"})
        _run("forward", ["--model", os.fspath(model), "--inputs", given, "--output", out, "--generate", str(int(generate))] +
             _flags(dict(scheme, device=device, dtype=dtype)), binary, timeout)
        tensors, metadata = safetensors.load(out)
    tensors["metadata"] = metadata
    return tensors


def attend(model=None, image=None, question=None, *, output=None, binary=None, timeout=None, **options):
    """`ropescope attend`: returns {"summary": dict, "answer": str, "attention": {name: array} (the maps and
    positions of attention.safetensors), "positions": {column: array} (positions.csv), "files": {name: path}}.
    options: the command's flags (per_token=True, layers_heads=True, region="...", scheme="circle", alpha=0.3, ...).
    image: a path, or a list of paths for several pictures. output: a folder to keep the files in (default: a
    temporary one, removed after reading; the "files" then name nothing that still exists)."""
    args = []
    if model is not None:
        args += ["--model", os.fspath(model)]
    for path in ([image] if isinstance(image, (str, os.PathLike)) else image or []):
        args += ["--image", os.fspath(path)]
    if question is not None:
        args += ["--question", question]
    with tempfile.TemporaryDirectory(prefix="ropescope-") as tmp:
        folder = os.fspath(output) if output is not None else tmp
        _run("attend", args + ["--output", folder] + _flags(options), binary, timeout)
        result = {"files": {name: os.path.join(folder, name) for name in sorted(os.listdir(folder))}}
        with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
            result["summary"] = json.load(f)
        with open(os.path.join(folder, "answer.txt"), encoding="utf-8") as f:
            result["answer"] = f.read().rstrip("\n")
        result["attention"] = safetensors.load(os.path.join(folder, "attention.safetensors"))[0]
        with open(os.path.join(folder, "positions.csv"), encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        columns = {}
        for key in (rows[0].keys() if rows else []):
            values = [r[key] for r in rows]
            try:
                columns[key] = np.array([float(v) for v in values])
            except ValueError:
                columns[key] = np.array(values)
        result["positions"] = columns
        for name in os.listdir(folder):
            if name.endswith(".json") and name != "summary.json":
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    result[name[:-5]] = json.load(f)
    return result
