"""The linear-chain CRF: pure tensor math (forward algorithm, Viterbi, forward-backward,
n-best, constrained partitions) and its compiled kernels. Imports nothing else of crftag.

    from crftag.crf import CRF
    crf = CRF(num_tags=5)

``teacher_marginals`` and ``posterior_cross_entropy`` distil one CRF into another
(:mod:`crftag.crf.distillation`). They and ``CRF`` are loaded on first use: the torch-free
runtime imports this package's NumPy decoding (``arrays``) without pulling torch in.
"""

import importlib

__all__ = ["CRF", "posterior_cross_entropy", "teacher_marginals"]
_EXPORTS = {
    "CRF": "crftag.crf.crf",
    "posterior_cross_entropy": "crftag.crf.distillation",
    "teacher_marginals": "crftag.crf.distillation",
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crftag.crf' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
