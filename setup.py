"""Build hook for the one compiled piece, the CRF's CPU kernels (crftag/crf/_compiled.c: Viterbi
and the scaled forward-backward).

Everything else about the package is declared in pyproject.toml. The extension is optional:
where no C compiler or Python headers are available the install still succeeds and
crftag.crf.kernels runs its NumPy loops instead: the same results, only slower.
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "crftag.crf._compiled",
            sources=["crftag/crf/_compiled.c"],
            # -O3 vectorises the inner loops (Viterbi's max over the batch row);
            # MSVC spells its flags differently.
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        )
    ]
)
