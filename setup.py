"""Build step for the optional C extension ``lorescan._native`` (everything else is in pyproject.toml).

The extension gates a pass's simple entries over compact arrays. It is optional: where no C
compiler or Python headers are found, the build goes on without it and the engine runs the same
steps in Python (``lorescan/_csrc/module.c`` says more)."""

from setuptools import Extension, setup

SOURCES = ["module.c", "window.c", "gates.c", "order.c", "budget.c", "records.c", "hits.c", "attrs.c", "buckets.c",
           "json.c", "messages.c", "listing.c", "bpe.c",
           "compile.c"]

setup(ext_modules=[Extension("lorescan._native", [f"lorescan/_csrc/{name}" for name in SOURCES],
                             depends=["lorescan/_csrc/native.h", "lorescan/_csrc/unicode14.h"], optional=True, extra_compile_args=["-O2"])])
