"""The `ropescope` binary run in a process of its own: found, run with a time limit, and its error raised as an
exception. Used by runner.py (forward, attend) and schemes.py (a Python scheme file's positions); neither imports
the other for it.

The binary is found at $ROPESCOPE_BINARY, in the build tree beside this package (<build>/bin/ropescope), in this
checkout's build/bin, or on PATH."""
import os
import shutil
import subprocess

from ._lib import InvalidInput, RopeScopeError


def binary_path(given):
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


def run_binary(path, argv, timeout):
    for arg in argv:
        if "\x00" in arg:
            raise InvalidInput("%s: holds a NUL character" % argv[max(argv.index(arg) - 1, 0)].lstrip("-"))
    try:
        return subprocess.run([path] + argv, capture_output=True, text=True, errors="replace", timeout=timeout)
    except OSError as e:
        raise RopeScopeError("%s: cannot run it (%s)" % (path, e.strerror or e)) from None
    except subprocess.TimeoutExpired:
        raise RopeScopeError("%s %s: no answer within %s s" % (path, argv[0], timeout)) from None


def _error_text(stderr, command, code):
    """The binary's error: from its last line that starts "ropescope" to the end (a message whose path holds a
    newline spans lines), else all of stderr; warnings before it are left out."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith("ropescope")]
    kept = lines[starts[-1]:] if starts else lines
    return " ".join(kept) if kept else "%s exited with %d" % (command, code)


def run(command, args, binary, timeout, path=None):
    path = path or binary_path(binary)
    run = run_binary(path, [command] + args, timeout)
    if run.returncode != 0:
        raise (InvalidInput if run.returncode == 2 else RopeScopeError)(_error_text(run.stderr, command, run.returncode))
    return run
