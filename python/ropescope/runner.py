"""Models run through the `ropescope` binary, in a process of its own (so LibTorch never enters the caller's):
forward() on pre-processed inputs and attend() on a picture and a question, their outputs read back as numpy
arrays and dicts, the binary's one-line errors raised as exceptions.

The binary is found as _process.py says; or pass binary=."""
import csv
import io
import json
import os
import re
import stat
import tempfile

import numpy as np

from . import _process, safetensors
from ._lib import InvalidInput, RopeScopeError, whole
from .schemes import _value_text, parameters


_HELP_OPTION = re.compile(r"^\s+(?:-\w, )?--([A-Za-z0-9][A-Za-z0-9-]*)")
_command_options = {}
# Flags the package sets itself, and those Qt's parser answers with help instead of a run: never from **options.
_OWN_FLAGS = {"forward": {"model", "inputs", "output", "generate", "device", "dtype"},
              "attend": {"model", "image", "question", "output"}}
_HELP_FLAGS = {"help", "help-all", "version"}
_JSON_BYTES = 1 << 30  # one of attend's JSON files, read back whole


def _options_of(path, command, timeout):
    """The options `ropescope COMMAND --help` lists (cached per binary): what keyword arguments may set."""
    key = (path, command)
    if key not in _command_options:
        run = _process.run_binary(path, [command, "--help"], timeout)
        found = {m.group(1) for m in map(_HELP_OPTION.match, run.stdout.splitlines()) if m}
        if run.returncode != 0 or not found:
            raise RopeScopeError("%s %s --help: no option list (exit %d)" % (path, command, run.returncode))
        _command_options[key] = found
    return _command_options[key]


def _radius_text(options, rows):
    """radius_mode and radius, the parameter table's two rows, as the CLI's one --radius: R, auto-K or code-auto-K
    (the radius not given: the table's default, as positions() places it)."""
    mode, radius = options.pop("radius_mode", None), options.pop("radius", None)
    if mode is None and radius is None:
        return []
    if radius is None:
        radius = rows["radius"]["default"]
    value = _value_text("radius", radius)
    if mode is None or mode == "fixed":
        return ["--radius", value]
    if mode not in rows["radius_mode"]["choices"]:
        raise InvalidInput("radius_mode: expected %s, got %r" % (", ".join(rows["radius_mode"]["choices"]), mode), "radius_mode")
    return ["--radius", "%s-%s" % (mode, value)]


def _flags(command, options, path, timeout):
    """Keyword arguments as the binary's flags: a scheme parameter by its row's type (on/off, x,y,z, a number or
    a name; the rotary box's theta and head_dim), a command option True as a bare flag (False and None: left out),
    anything else as its text (a list joined by commas). Only the parameter table's keys and the command's own
    options are taken: any other name, or a flag the package sets itself, is refused by name."""
    rows = {p["key"]: p for p in parameters()}
    options = {k: v for k, v in options.items() if v is not None}
    args = _radius_text(options, rows)
    allowed = None
    for key, value in options.items():
        flag = key.replace("_", "-")
        if flag in _OWN_FLAGS.get(command, ()) or flag in _HELP_FLAGS:
            raise InvalidInput("%s: set by %s() itself, not a keyword option" % (key, command), key)
        if key in rows or key in ("theta", "head_dim"):
            args += ["--" + flag, _value_text(key, value)]
            continue
        allowed = _options_of(path, command, timeout) if allowed is None else allowed
        if flag not in allowed:
            raise InvalidInput("%s: not a scheme parameter nor an option of `ropescope %s`" % (key, command), key)
        if value is True:
            args.append("--" + flag)
        elif value is False:
            continue
        elif isinstance(value, (list, tuple)):
            args += ["--" + flag, ",".join(str(v) for v in value)]
        else:
            args += ["--" + flag, str(value)]
    return args


def _whole_array(name, value):
    """An integer array for the inputs file: floats (truncated by a cast), bools and timedeltas refused by name."""
    try:
        a = np.asarray(value)
    except Exception as e:
        raise InvalidInput("%s: not an array (%s)" % (name, e), name) from None
    if a.dtype.kind not in "iu":
        raise InvalidInput("%s: expected whole numbers (an integer array), got %s" % (name, a.dtype), name)
    if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise InvalidInput("%s: holds values above 2^63 - 1" % name, name)
    return a.astype(np.int64)


def _prompt_ids(input_ids, attention_mask):
    """input_ids as [1, L]: one prompt, as `ropescope forward` runs it. A batch of more rows is refused (its rows
    would run as one prompt); an attention_mask of all ones says nothing and is dropped; one with zeros is refused
    (the binary runs no padding)."""
    ids = _whole_array("input_ids", input_ids)
    if ids.ndim == 1:
        ids = ids.reshape(1, -1)
    if ids.ndim != 2 or ids.shape[0] != 1:
        raise InvalidInput("input_ids: forward runs one prompt, [L] or [1, L]; got shape %s (pass the rows one at a time)" %
                           (tuple(ids.shape),), "input_ids")
    if attention_mask is not None:
        mask = np.asarray(attention_mask)
        mask = (mask.astype(np.int64) if mask.dtype == np.bool_ else _whole_array("attention_mask", mask)).reshape(-1)
        if mask.size != ids.shape[1]:
            raise InvalidInput("attention_mask: %d values for %d tokens" % (mask.size, ids.shape[1]), "attention_mask")
        if np.any((mask != 0) & (mask != 1)):
            raise InvalidInput("attention_mask: holds values other than 0 and 1", "attention_mask")
        if np.any(mask == 0):
            raise InvalidInput("attention_mask: token %d is padding (0); forward runs one unpadded prompt: pass the attended "
                               "tokens only" % int(np.argmin(mask)), "attention_mask")
    return ids


def forward(model, input_ids, pixel_values=None, image_grid_thw=None, pixel_values_videos=None, video_grid_thw=None,
            mm_token_type_ids=None, attention_mask=None, *, generate=5, device=None, dtype=None, binary=None, timeout=None, **scheme):
    """`ropescope forward` on one pre-processed prompt (the processor's tensors): returns {name: array} with
    position_ids, rope_deltas, inputs_embeds, decoder_layer_outputs, logits, attentions, generated_ids, ... and
    "metadata" (the scheme, layout and allocation used). scheme: scheme="circle", alpha=0.3, ... as the CLI's flags.
    input_ids: [L] or [1, L] (one prompt); attention_mask: all ones, or left out."""
    inputs = {"input_ids": _prompt_ids(input_ids, attention_mask)}
    generate = whole("generate", generate, 0, 4096)
    for name, value, kind in (("pixel_values", pixel_values, np.float32), ("image_grid_thw", image_grid_thw, np.int64),
                              ("pixel_values_videos", pixel_values_videos, np.float32), ("video_grid_thw", video_grid_thw, np.int64),
                              ("mm_token_type_ids", mm_token_type_ids, np.int64)):
        if value is not None:
            inputs[name] = _whole_array(name, value) if kind is np.int64 else np.asarray(value, dtype=kind)
    path = _process.binary_path(binary)
    flags = _flags("forward", scheme, path, timeout)
    for flag, value in (("--device", device), ("--dtype", dtype)):
        if value is not None:
            flags += [flag, str(value)]
    with tempfile.TemporaryDirectory(prefix="ropescope-") as tmp:
        given, out = os.path.join(tmp, "inputs.safetensors"), os.path.join(tmp, "outputs.safetensors")
        safetensors.save(given, inputs, {"format": "pt"})
        _process.run("forward", ["--model", os.fspath(model), "--inputs", given, "--output", out, "--generate", str(generate)] + flags,
             binary, timeout, path)
        if not os.path.isfile(out):
            raise RopeScopeError("forward: the binary exited with 0 but wrote no outputs.safetensors")
        tensors, metadata = safetensors.load(out)
    tensors["metadata"] = metadata
    return tensors


def _entries(folder):
    """Each entry of `folder` by its identity (device, inode, modification time, size; a link's own): what the run
    replaced or added differs. Nothing for a folder that does not exist yet."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    out = {}
    for name in names:
        try:
            st = os.lstat(os.path.join(folder, name))
        except OSError:
            continue
        out[name] = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)
    return out


def _written(folder, before):
    """The regular files of `folder` the run wrote (new, or replaced: the binary writes each by rename)."""
    after = _entries(folder)
    return sorted(name for name, sig in after.items() if stat.S_ISREG(sig[4]) and before.get(name) != sig)


def _read_written(folder, name, written):
    """A file the run wrote, opened without following a link or waiting on a FIFO, at most 1 GiB."""
    if name not in written:
        raise RopeScopeError("attend: the binary exited with 0 but wrote no %s" % name)
    fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise RopeScopeError("attend: %s is no longer a regular file" % name)
        data = f.read(_JSON_BYTES + 1)
    if len(data) > _JSON_BYTES:
        raise RopeScopeError("attend: %s is larger than 1 GiB" % name)
    return data.decode("utf-8", "replace")


def _positions_columns(text):
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    columns = {}
    for key in (rows[0].keys() if rows else []):
        values = [r[key] for r in rows]
        try:
            columns[key] = np.array([float(v) for v in values])
        except ValueError:
            columns[key] = np.array(values)
    return columns


def attend(model=None, image=None, question=None, *, output=None, binary=None, timeout=None, **options):
    """`ropescope attend`: returns {"summary": dict, "answer": str, "attention": {name: array} (the maps and
    positions of attention.safetensors), "positions": {column: array} (positions.csv), "files": {name: path}}.
    options: the command's flags (per_token=True, layers_heads=True, region="...", scheme="circle", alpha=0.3, ...).
    image: a path, or a list of paths for several pictures. output: a folder to keep the files in (default: a
    temporary one, removed after reading; the "files" then name nothing that still exists). Only the files this
    run wrote are read back (and listed in "files"), never others already in the folder."""
    args = []
    if model is not None:
        args += ["--model", os.fspath(model)]
    for path in ([image] if isinstance(image, (str, os.PathLike)) else image or []):
        args += ["--image", os.fspath(path)]
    if question is not None:
        args += ["--question", question]
    path = _process.binary_path(binary)
    flags = _flags("attend", options, path, timeout)
    with tempfile.TemporaryDirectory(prefix="ropescope-") as tmp:
        folder = os.fspath(output) if output is not None else tmp
        before = _entries(folder)
        _process.run("attend", args + ["--output", folder] + flags, binary, timeout, path)
        written = _written(folder, before)
        result = {"files": {name: os.path.join(folder, name) for name in written}}
        try:
            result["summary"] = json.loads(_read_written(folder, "summary.json", written))
            result["answer"] = _read_written(folder, "answer.txt", written).rstrip("\n")
            if "attention.safetensors" not in written:
                raise RopeScopeError("attend: the binary exited with 0 but wrote no attention.safetensors")
            result["attention"] = safetensors.load(os.path.join(folder, "attention.safetensors"))[0]
            result["positions"] = _positions_columns(_read_written(folder, "positions.csv", written))
            for name in written:
                if name.endswith(".json") and name != "summary.json":
                    result[name[:-5]] = json.loads(_read_written(folder, name, written))
        except (OSError, ValueError) as e:
            raise RopeScopeError("attend: an output of the run cannot be read (%s)" % e) from None
    return result
