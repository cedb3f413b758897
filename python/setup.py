"""The ropescope package with the library it loads: libropescope_c.so is copied into the package at build time from
$ROPESCOPE_C_LIBRARY, from beside the modules (<build>/python, where CMake builds it), or from this checkout's
build/python/ropescope/. The wheel is tagged for this platform (the library is machine code), not for a Python ABI:
the library is loaded through ctypes, never compiled against an interpreter."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "libropescope_c.so"


def built_library():
    given = os.environ.get("ROPESCOPE_C_LIBRARY")
    candidates = [given] if given else [os.path.join(HERE, "ropescope", LIBRARY),
                                        os.path.join(HERE, os.pardir, "build", "python", "ropescope", LIBRARY)]
    for path in candidates:
        if os.path.isfile(path):
            return os.path.normpath(path)
    raise SystemExit("ropescope: %s not found (looked at %s): build it first with `cmake --build build --target "
                     "ropescope_python`, or set ROPESCOPE_C_LIBRARY" % (LIBRARY, ", ".join(os.path.normpath(p) for p in candidates)))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "ropescope", LIBRARY)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built_library(), target)


class PlatformDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries a shared library
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=PlatformDistribution)
