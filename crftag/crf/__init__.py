"""The linear-chain CRF: pure tensor math (forward algorithm, Viterbi, forward-backward,
n-best, constrained partitions) and its compiled kernels. Imports nothing else of crftag.

    from crftag.crf import CRF
    crf = CRF(num_tags=5)

``CRF`` is loaded on first use: the torch-free runtime imports this package's NumPy decoding
(``arrays``) without pulling torch in.
"""

import importlib

__all__ = ["CRF"]
_EXPORTS = {"CRF": "crftag.crf.crf"}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crftag.crf' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
