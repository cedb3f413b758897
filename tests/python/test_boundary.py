"""Hostile input at the package's boundary (issue 71): what once crashed the interpreter, hung, read without bound,
wrapped through ctypes or was cut at a NUL now raises one InvalidInput (or RopeScopeError) naming what is wrong.
forward() and attend() run a stand-in binary (a Python script that answers --help and writes the outputs), so the
package's own side is checked without a model."""
import contextlib
import copy
import ctypes
import json
import os
import pickle
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

import ropescope
from ropescope import _lib, safetensors

VS, VE, IMG = 250, 251, 253


def prompt():
    """text 2, <|vision_start|>, a 4x6 patch image (6 tokens), <|vision_end|>, text 2."""
    return np.array([[1, 2, VS] + [IMG] * 6 + [VE, 3, 4]]), np.array([[1, 4, 6]])


@contextlib.contextmanager
def deadline(seconds):
    """Fails the test, rather than hanging the suite, when a call blocks (a FIFO opened for reading)."""
    def expire(signum, frame):
        raise TimeoutError("still blocked after %d s" % seconds)
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_python(code):
    """`code` in a fresh interpreter with this one's environment: a crash there is a failed test here."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


class Refusing(unittest.TestCase):
    def assertRefused(self, parameter, words, f, *args, error=ropescope.InvalidInput, **kwargs):
        with self.assertRaises(error) as caught:
            f(*args, **kwargs)
        self.assertIn(words, str(caught.exception))
        if parameter is not None:
            self.assertEqual(caught.exception.parameter, parameter)
        return caught.exception


class Crashes(Refusing):
    def test_prior_is_sized_from_the_c_table_not_the_modality_attribute(self):
        r = run_python("""
            import numpy as np, ropescope
            t = ropescope.positions("text:4,image:32x32,text:4", "circle")
            want = t.prior(1)
            t.modality = t.modality[:10]
            got = t.prior(1)
            print(got.shape[0], np.array_equal(got, want))
        """)
        self.assertEqual((r.returncode, r.stdout.split()), (0, ["1024", "True"]), r.stderr)

    def test_a_copied_table_frees_its_handle_once(self):
        r = run_python("""
            import copy, numpy as np, ropescope
            t = ropescope.positions("text:4,image:4x4,text:4", "mrope")
            want = t.prior(1)
            u, v = copy.copy(t), copy.deepcopy(t)
            del t
            print(np.array_equal(u.prior(1), want), ropescope.ptd(u)["mean"] == ropescope.ptd(v)["mean"])
            del u
            print(np.array_equal(v.prior(1), want))
        """)
        self.assertEqual((r.returncode, r.stdout.split()), (0, ["True", "True", "True"]), r.stderr)
        self.assertEqual(r.stderr, "")

    def test_choices_are_listed_one_by_one(self):
        rows = {p["key"]: p for p in ropescope.parameters()}
        self.assertEqual(rows["radius_mode"]["choices"], ["fixed", "auto", "code-auto"])

    def test_a_table_is_not_pickled(self):
        with self.assertRaises(TypeError) as caught:
            pickle.dumps(ropescope.positions("text:2,image:2x2", "mrope"))
        self.assertIn("cannot be pickled", str(caught.exception))


class Config(Refusing):
    def rope(self, config):
        ids, grid = prompt()
        return ropescope.rope_index("qwen2-vl", ids, grid, config=config)

    def test_a_fifo_is_refused_without_waiting(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "config.json")
            os.mkfifo(fifo)
            with deadline(20):
                self.assertRefused("config", "is not a regular file", self.rope, fifo)
                self.assertRefused("config", "is not a regular file", self.rope, tmp)  # the folder's config.json

    def test_a_device_and_a_large_file_are_refused(self):
        with deadline(20):
            self.assertRefused("config", "/dev/zero is not a regular file", self.rope, "/dev/zero")
        with tempfile.NamedTemporaryFile("wb", suffix=".json") as f:
            f.write(b" " * ((16 << 20) + 1))
            f.flush()
            self.assertRefused("config", "larger than 16 MiB", self.rope, f.name)

    def test_malformed_configs_name_what_is_wrong(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("[" * 100000 + "]" * 100000)
            f.flush()
            self.assertRefused("config", "nests too deep", self.rope, f.name)
        self.assertRefused("image_token_id", "expected a whole number", self.rope, {"image_token_id": [1, 2]})
        self.assertRefused("vocab_size", "expected a whole number", self.rope, {"text_config": {"vocab_size": {"a": 1}}})
        self.assertRefused("vision_config", "vision_config: expected an object, got list", self.rope, {"vision_config": [1, 2]})
        self.assertRefused("config", "holds a NUL", self.rope, "config\x00.json")


class Numbers(Refusing):
    def rope(self, **kwargs):
        ids, grid = prompt()
        kwargs.setdefault("image_token_id", IMG)
        return ropescope.rope_index("qwen2-vl", ids, grid, **kwargs)

    def test_whole_numbers_past_int64_are_refused_not_wrapped(self):
        self.assertRefused("image_token_id", "must be from 0 to 9223372036854775807, got 18446744073709551621", self.rope,
                           image_token_id=2**64 + 5)
        self.assertRefused("vocab_size", "got 18446744073709551626", self.rope, vocab_size=2**64 + 10)
        self.assertRefused("spatial_merge_size", "got 18446744073709551616", self.rope, spatial_merge_size=2**64)
        self.assertRefused("video_token_id", "got 18446744073709551616", self.rope, config={"video_token_id": 2**64})
        self.assertRefused("image_start_token_id", "got 18446744073709551616", ropescope.rope_index, "xd-rope", [[1, 2]],
                           config={"image_start_token_id": 2**64})
        t = ropescope.positions("text:2,image:2x2,text:2", "mrope")
        self.assertRefused("text_token", "must be from 0 to 7, got 18446744073709551616", t.prior, 2**64)
        self.assertRefused("text_token", "got -1", t.prior, -1)

    def test_tokens_per_second_must_be_above_zero(self):
        for tps in (-1, -0.5, 0, float("nan")):
            with self.subTest(tps=tps):
                self.assertRefused("tokens_per_second", "must be above 0", self.rope, tokens_per_second=tps)
        self.assertEqual(self.rope(tokens_per_second=4)[0].shape, (3, 1, 12))

    def test_timedeltas_are_not_ids(self):
        ids, grid = prompt()
        self.assertRefused("input_ids", "expected whole numbers", ropescope.rope_index, "qwen2-vl", ids.astype("timedelta64[s]"), grid)

    def test_a_shape_error_names_its_tensor(self):
        ids, grid = prompt()
        e = self.assertRefused("attention_mask", "'attention_mask' must be [B, L]", ropescope.rope_index, "qwen2-vl", ids, grid,
                               attention_mask=np.ones((1, 5), np.int64))
        self.assertEqual(e.parameter, "attention_mask")

    def test_out_of_memory_is_the_librarys_error_not_the_inputs(self):
        # 10^7 text tokens under an address-space limit 800 MiB above what the process holds: rope_index's own
        # outputs (240 MB) fit, the library's placement of the row does not.
        r = run_python("""
            import resource, numpy as np, ropescope
            ids = np.ones((1, 10**7), np.int64)
            with open("/proc/self/status") as f:
                vm = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize")][0]
            resource.setrlimit(resource.RLIMIT_AS, (vm + (800 << 20), resource.RLIM_INFINITY))
            try:
                ropescope.rope_index("qwen2-vl", ids)
            except Exception as e:
                print("%s: %s" % (type(e).__name__, e))
        """)
        self.assertEqual(r.stdout.strip(), "RopeScopeError: out of memory", r.stderr)

    def test_a_four_row_table_is_named_by_its_shape(self):
        ids, grid = prompt()
        pos, _ = ropescope.rope_index("qwen2-vl", ids, grid, image_token_id=IMG)
        text_row = np.arange(12).reshape(1, 1, 12)
        first = ropescope.check_positions(np.concatenate([text_row, pos]), ids, "qwen2-vl", grid, image_token_id=IMG)
        self.assertTrue(first.ok, str(first))
        last = ropescope.check_positions(np.concatenate([pos, text_row]), ids, "qwen2-vl", grid, image_token_id=IMG)[0]
        self.assertEqual(last.kind, "other")
        self.assertIn("position_ids is [4, B, L], read as (text, t, h, w), but its rows 0-2 are the rule's t, h, w", last.detail)
        wrong = np.concatenate([text_row + 1, pos])
        s = ropescope.check_positions(wrong, ids, "qwen2-vl", grid, image_token_id=IMG)[0]
        self.assertEqual((s.kind, s.axis, s.first_token), ("other", "text", 0))
        self.assertIn("position_ids is [4, B, L], read as (text, t, h, w): its row 0, the text row, is not 0, 1, 2", s.detail)

    def test_collator_every_must_be_a_count(self):
        for every in (0, -1, True, 1.5):
            with self.subTest(every=every):
                self.assertRefused("every", "every", ropescope.CheckedCollator, lambda f: f, "qwen2-vl", every=every)
        self.assertEqual(ropescope.CheckedCollator(lambda f: f, "qwen2-vl", every=3).every, 3)


class Text(Refusing):
    def test_a_nul_is_refused_not_cut(self):
        ids, grid = prompt()
        self.assertRefused("family", "holds a NUL character at 8", ropescope.rope_index, "qwen2-vl\x00evil", ids, grid)
        self.assertRefused("layout", "holds a NUL character at 6", ropescope.positions, "text:4\x00image:1x1", "mrope")
        self.assertRefused("scheme", "holds a NUL", ropescope.positions, "text:4", "mrope\x00x")
        self.assertRefused("radius_mode", "holds a NUL", ropescope.positions, "text:4,image:2x2", "circle", radius_mode="auto\x00x")

    def test_a_lone_surrogate_is_invalid_input(self):
        ids, grid = prompt()
        self.assertRefused("family", "not valid text", ropescope.rope_index, "qwen\ud800", ids, grid)
        self.assertRefused("layout", "not valid text", ropescope.positions, "text:4\udcff", "mrope")


class CApi(unittest.TestCase):
    """The library's own checks, through ctypes as any C caller reaches them."""

    def rule(self, family):
        handle = ctypes.c_void_p()
        self.assertEqual(_lib.lib.rs_rule_new(family.encode(), ctypes.byref(handle)), 0)
        self.addCleanup(_lib.lib.rs_rule_free, handle)
        return handle

    def test_rope_index_checks_the_capacities_before_writing(self):
        rule = self.rule("xd-rope")
        ids = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
        keep = []
        batch = ropescope.rope._batch(ids, None, None, None, None, None, keep)
        pos = np.full(4 * 2 * 3, -7, dtype=np.int64)
        deltas = np.full(2, -7, dtype=np.int64)
        p64 = ctypes.POINTER(ctypes.c_int64)
        status = _lib.lib.rs_rope_index(rule, ctypes.byref(batch), pos.ctypes.data_as(p64), 3 * 2 * 3, deltas.ctypes.data_as(p64), 2)
        self.assertEqual(status, 1)
        self.assertEqual(_lib.lib.rs_last_error().decode(), "position_ids: room for 18 values; the rule writes 24 (4 x B x L)")
        self.assertEqual(_lib.lib.rs_last_error_parameter().decode(), "position_ids")
        self.assertTrue((pos == -7).all() and (deltas == -7).all())
        status = _lib.lib.rs_rope_index(rule, ctypes.byref(batch), pos.ctypes.data_as(p64), pos.size, deltas.ctypes.data_as(p64), 1)
        self.assertEqual((status, _lib.lib.rs_last_error_parameter().decode()), (1, "rope_deltas"))
        self.assertTrue((pos == -7).all())
        status = _lib.lib.rs_rope_index(rule, ctypes.byref(batch), pos.ctypes.data_as(p64), pos.size, deltas.ctypes.data_as(p64), 2)
        self.assertEqual(status, 0)
        np.testing.assert_array_equal(pos.reshape(4, 2, 3)[0], [[0, 1, 2], [0, 1, 2]])

    def test_prior_checks_its_capacity(self):
        t = ropescope.positions("text:2,image:2x2,text:2", "mrope")
        out = np.full(4, -7.0)
        status = _lib.lib.rs_table_prior(t._handle, 0, out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), 3)
        self.assertEqual(status, 1)
        self.assertIn("room for 3 values; the table has 4 visual tokens", _lib.lib.rs_last_error().decode())
        self.assertTrue((out == -7.0).all())

    def test_section_sums_do_not_wrap(self):
        sections = (ctypes.c_int32 * 3)(2**31 - 1, 2**31 - 1, 66)
        values = np.zeros((2, 3))
        handle = ctypes.c_void_p()
        status = _lib.lib.rs_table_from_positions(b"text:2", b"given", 3, None, 2, values.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                                  b"sectioned", sections, 3, 1e6, 128, ctypes.byref(handle))
        self.assertEqual(status, 1)
        self.assertIn("summing to 4294967360", _lib.lib.rs_last_error().decode())

    def test_the_abi_version_is_checked_before_any_symbol_is_bound(self):
        class Old:  # a library of another version: only its version is looked up
            def __init__(self, version):
                if version is not None:
                    self.rs_abi_version = lambda: version

        with self.assertRaises(ropescope.RopeScopeError) as caught:
            _lib._checked(Old(2))
        self.assertIn("has ABI version 2, not this package's 4", str(caught.exception))
        with self.assertRaises(ropescope.RopeScopeError) as caught:
            _lib._checked(Old(None))
        self.assertIn("has no ABI version", str(caught.exception))
        self.assertEqual(_lib.lib.rs_abi_version(), 4)


FAKE_BINARY = r'''#!PYTHON
# A stand-in for the ropescope binary: --help lists options as Qt's parser does; forward copies its inputs to its
# output (so the test reads back what it was given); attend writes its four files by rename, as the binary does.
import json, os, shutil, sys
log = os.environ["FAKE_LOG"]
with open(log, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
command, args = sys.argv[1], sys.argv[2:]
if "--help" in args:
    print("Usage: ropescope %s [options]\n\nOptions:\n  -h, --help      Displays help.\n  --scheme <S>    Position scheme.\n"
          "  --partial-rotary <F>  Fraction.\n  --per-token     Maps.\n  --radius <R>    Radius.\n  --output <DIR>  Out." % command)
    sys.exit(0)
mode = os.environ.get("FAKE_MODE", "")
if mode == "fail":
    sys.stderr.write("warning: something\nropescope %s: /tmp/a\nb: cannot be read\n" % command)
    sys.exit(2)
out = args[args.index("--output") + 1]
if mode == "silent":
    sys.exit(0)
if command == "forward":
    shutil.copy(args[args.index("--inputs") + 1], out)
elif command == "attend":
    os.makedirs(out, exist_ok=True)
    files = {"summary.json": '{"scheme": "mrope", "answer": "a cat"}', "answer.txt": "a cat\n", "tokens.json": '{"n": 3}',
             "positions.csv": "t,h,w\n0,0,0\n1,1,1\n"}
    for name, text in files.items():
        with open(os.path.join(out, name + ".tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
    shutil.copy(os.environ["FAKE_ATTENTION"], os.path.join(out, "attention.safetensors"))
'''


class Modules(unittest.TestCase):
    def test_runner_and_schemes_do_not_import_each_other(self):
        import ast
        here = os.path.dirname(ropescope.__file__)
        imported = {}
        for name in ("runner", "schemes", "_process"):
            with open(os.path.join(here, name + ".py"), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            found = set()
            for node in ast.walk(tree):  # function-level imports too
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    found |= {node.module} if node.module else {a.name for a in node.names}
            imported[name] = found
        self.assertIn("schemes", imported["runner"])
        self.assertNotIn("runner", imported["schemes"])
        self.assertFalse({"runner", "schemes"} & imported["_process"])


class Runner(Refusing):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ropescope-test-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp])
        self.binary = os.path.join(self.tmp, "ropescope")
        with open(self.binary, "w") as f:
            f.write(FAKE_BINARY.replace("PYTHON", sys.executable))
        os.chmod(self.binary, 0o755)
        self.log = os.path.join(self.tmp, "log")
        attention = os.path.join(self.tmp, "attention.safetensors")
        safetensors.save(attention, {"map": np.ones((2, 2), np.float32)}, {})
        env = {"FAKE_LOG": self.log, "FAKE_ATTENTION": attention, "FAKE_MODE": ""}
        self.saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        self.addCleanup(self.restore)

    def restore(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def runs(self):
        """The argument lists the stand-in was run with, other than --help."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [a for a in map(json.loads, f) if "--help" not in a]

    def forward(self, ids, **kwargs):
        return ropescope.forward("/models/m", ids, binary=self.binary, **kwargs)

    def test_one_prompt_goes_through_as_one_row(self):
        out = self.forward([5, 6, 7], attention_mask=[1, 1, 1])
        np.testing.assert_array_equal(out["input_ids"], [[5, 6, 7]])
        self.assertNotIn("attention_mask", out)
        self.assertEqual(len(self.runs()), 1)
        out = self.forward(np.array([[5, 6, 7]], np.int32), attention_mask=np.ones((1, 3), bool))
        np.testing.assert_array_equal(out["input_ids"], [[5, 6, 7]])

    def test_a_batch_padding_and_float_ids_are_refused_before_running(self):
        self.assertRefused("input_ids", "forward runs one prompt, [L] or [1, L]; got shape (2, 3)", self.forward, [[1, 2, 3], [4, 5, 6]])
        self.assertRefused("attention_mask", "token 0 is padding (0)", self.forward, [0, 5, 6], attention_mask=[0, 1, 1])
        self.assertRefused("attention_mask", "2 values for 3 tokens", self.forward, [1, 5, 6], attention_mask=[1, 1])
        self.assertRefused("input_ids", "expected whole numbers (an integer array), got float64", self.forward, [1.7, 2.2])
        self.assertRefused("image_grid_thw", "got float64", self.forward, [1, 2], image_grid_thw=[[1.5, 2, 2]])
        self.assertRefused("generate", "must be from 0 to 4096, got 1000000000000", self.forward, [1, 2], generate=10**12)
        self.assertEqual(self.runs(), [])

    def test_keywords_become_only_known_flags(self):
        self.assertRefused("output=/x.safetensors", "not a scheme parameter nor an option of `ropescope forward`", self.forward, [1],
                           **{"output=/x.safetensors": True})
        for key in ("output", "inputs", "help", "help_all"):
            with self.subTest(key=key):
                self.assertRefused(key, "set by forward() itself", self.forward, [1], **{key: True})
        self.assertRefused("nope", "not a scheme parameter", self.forward, [1], nope=1)
        self.assertEqual(self.runs(), [])
        self.forward([1], scheme="circle", partial_rotary=0.5, radius_mode="auto", radius=2, alpha=0.3)
        args = self.runs()[0]
        for pair in (["--partial-rotary", "0.5"], ["--radius", "auto-2.0"], ["--alpha", "0.3"], ["--scheme", "circle"]):
            self.assertIn(pair, [args[i:i + 2] for i in range(len(args) - 1)])
        self.forward([1], radius_mode="code-auto", device="cuda", dtype="bf16")
        self.assertIn("code-auto-10.0", self.runs()[1])
        self.assertEqual(self.runs()[1][-4:], ["--device", "cuda", "--dtype", "bf16"])

    def test_the_binarys_errors(self):
        os.environ["FAKE_MODE"] = "fail"
        self.assertRefused(None, "ropescope forward: /tmp/a b: cannot be read", self.forward, [1])
        os.environ["FAKE_MODE"] = "silent"
        self.assertRefused(None, "wrote no outputs.safetensors", self.forward, [1], error=ropescope.RopeScopeError)
        self.assertRefused(None, "wrote no summary.json", ropescope.attend, output=os.path.join(self.tmp, "out"), binary=self.binary,
                           error=ropescope.RopeScopeError)

    def test_attend_reads_only_what_the_run_wrote(self):
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        os.mkfifo(os.path.join(out, "x.json"))
        os.symlink("/dev/zero", os.path.join(out, "zero.json"))
        with open(os.path.join(out, "bad.json"), "w") as f:
            f.write("{not json")
        with open(os.path.join(out, "tokens.json"), "w") as f:
            f.write("{an earlier run's, replaced")
        with deadline(30):
            r = ropescope.attend(output=out, binary=self.binary, per_token=True)
        self.assertEqual(r["summary"], {"scheme": "mrope", "answer": "a cat"})
        self.assertEqual(r["answer"], "a cat")
        self.assertEqual(r["tokens"], {"n": 3})
        np.testing.assert_array_equal(r["positions"]["h"], [0, 1])
        self.assertEqual(sorted(r["files"]), ["answer.txt", "attention.safetensors", "positions.csv", "summary.json", "tokens.json"])
        for name in ("x", "zero", "bad"):
            self.assertNotIn(name, r)
        self.assertIn("--per-token", self.runs()[0])


if __name__ == "__main__":
    unittest.main()
