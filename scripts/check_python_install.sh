#!/usr/bin/env bash
# The Python package installed as a user installs it, offline, with Debian's pip, setuptools and wheel:
#   1. a venv with --system-site-packages (Debian's numpy, and torch where python3-torch is installed):
#      pip install --no-build-isolation --no-index <checkout>/python; ropescope imported beside torch if there is one;
#   2. a venv without them, with its own numpy (a copy of Debian's: nothing can be downloaded here): the wheel that
#      `pip wheel` builds from <build>/python, installed with --no-index.
# Each venv imports the installed copy from a neutral folder and runs rope_index and positions.
#   scripts/check_python_install.sh BUILD_DIR [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=$PWD
build=$(cd "${1:?usage: check_python_install.sh BUILD_DIR [PYTHON]}" && pwd)
python=${2:-python3}
library=$build/python/ropescope/libropescope_c.so
[ -f "$library" ] || { echo "check_python_install: no $library (build the ropescope_python target)" >&2; exit 2; }

# The Debian packages this needs are scripts/setup.sh's to install.
listed=$(bash scripts/setup.sh packages)
for p in python3-venv python3-pip python3-setuptools python3-wheel python3-numpy; do
  grep -qx "$p" <<<"$listed" || { echo "check_python_install: $p is not in scripts/setup.sh's packages" >&2; exit 1; }
done
# The package's version is the project's.
project=$(sed -n -E 's/^project\(RopeScope VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
grep -q "^version = \"$project\"" python/pyproject.toml || { echo "check_python_install: python/pyproject.toml's version is not $project" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH ROPESCOPE_C_LIBRARY

# What each venv runs, from a folder with no ropescope in it: the installed copy, its own library, a result.
cat >"$work/use.py" <<'PY'
import os, sys
try:
    import torch  # beside PyTorch, where the venv has one
except ImportError:
    torch = None
import numpy as np
import ropescope
here = os.path.dirname(ropescope.__file__)
assert here.startswith(sys.prefix), (here, sys.prefix)
assert os.path.isfile(os.path.join(here, "libropescope_c.so")), here
ids = [[1, 2, 250] + [253] * 6 + [251, 3, 4]]
pos, deltas = ropescope.rope_index("qwen2-vl", torch.tensor(ids) if torch else ids, [[1, 4, 6]], image_token_id=253)
assert pos[:, 0, 3:9].tolist() == [[3] * 6, [3, 3, 3, 4, 4, 4], [3, 4, 5, 3, 4, 5]], pos
assert int(deltas[0, 0]) == -3
assert len(ropescope.positions("text:2,image:2x2,text:2", "mrope")) == 8
print("ropescope %s in %s, numpy %s from %s, torch %s" % (sys.version.split()[0], sys.prefix, np.__version__,
      os.path.dirname(np.__file__), torch.__version__ if torch else "absent"))
PY

# 1. The checkout's python/, copied so that setuptools' build/ and egg-info stay out of the source tree.
cp -r "$source_dir/python" "$work/checkout-python"
"$python" -m venv --system-site-packages "$work/system"
ROPESCOPE_C_LIBRARY=$library "$work/system/bin/python" -m pip install -q --no-build-isolation --no-index "$work/checkout-python"
(cd "$work" && "$work/system/bin/python" use.py)

# 2. A wheel built from the build folder (a copy: setuptools writes beside it), into a venv of its own.
cp -r "$build/python" "$work/build-python"
"$python" -m pip wheel -q --no-build-isolation --no-index --no-deps -w "$work/wheels" "$work/build-python"
wheel=$(ls "$work"/wheels/ropescope-*.whl)
"$python" -c "import sys, zipfile; sys.exit('ropescope/libropescope_c.so' not in zipfile.ZipFile(sys.argv[1]).namelist())" "$wheel" ||
  { echo "check_python_install: $wheel holds no libropescope_c.so" >&2; exit 1; }
"$python" -m venv "$work/own"
site=$("$work/own/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# The venv's own numpy: Debian's package and its metadata copied in, so that pip counts it as installed there.
"$python" - "$site" <<'PY'
import importlib.metadata, os, shutil, sys
import numpy
shutil.copytree(os.path.dirname(numpy.__file__), os.path.join(sys.argv[1], "numpy"))
meta = str(importlib.metadata.distribution("numpy")._path)
shutil.copytree(meta, os.path.join(sys.argv[1], os.path.basename(meta))) if os.path.isdir(meta) else shutil.copy(meta, sys.argv[1])
PY
"$work/own/bin/python" -m pip install -q --no-index "$wheel"
(cd "$work" && "$work/own/bin/python" use.py)
echo "check_python_install: installed from the checkout and as a wheel ($(basename "$wheel")), both import and run"
