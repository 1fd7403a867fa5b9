"""Build hook for the two compiled pieces: the CRF's CPU kernels (crftag/crf/_compiled.c: Viterbi
and the scaled forward-backward) and the BiLSTM's time loops (crftag/runtime/_lstm.c).

Everything else about the package is declared in pyproject.toml. Both extensions are optional:
where no C compiler or Python headers are available the install still succeeds and
crftag.crf.kernels and crftag.nn.fused_lstm run their NumPy and torch loops instead: the same
results up to float rounding, only slower.
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# -O3 vectorises the inner loops (Viterbi's max over the batch row, the LSTM's gate arithmetic);
# MSVC spells its flags differently.
OPTIMIZE = [] if sys.platform == "win32" else ["-O3"]
# The LSTM's two directions run on two threads of OpenMP's pool, which is torch's own where
# torch uses GNU OpenMP (libgomp is loaded once, by its soname).
OPENMP = [] if sys.platform == "win32" else ["-fopenmp"]


class BuildWithOptionalOpenMP(build_ext):
    """Builds an extension that asks for OpenMP without it where the compiler has none (clang
    on macOS): its two directions then run one after the other."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception:
            if not set(OPENMP) & set(ext.extra_compile_args):
                raise
            ext.extra_compile_args = [a for a in ext.extra_compile_args if a not in OPENMP]
            ext.extra_link_args = [a for a in ext.extra_link_args if a not in OPENMP]
            super().build_extension(ext)


setup(
    cmdclass={"build_ext": BuildWithOptionalOpenMP},
    ext_modules=[
        Extension(
            "crftag.crf._compiled",
            sources=["crftag/crf/_compiled.c"],
            extra_compile_args=OPTIMIZE,
            optional=True,
        ),
        Extension(
            "crftag.runtime._lstm",
            sources=["crftag/runtime/_lstm.c"],
            extra_compile_args=OPTIMIZE + OPENMP,
            extra_link_args=OPENMP,
            optional=True,
        ),
    ],
)
