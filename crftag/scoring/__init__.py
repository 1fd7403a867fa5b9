"""Scoring: entity and token scores of predicted against gold tags (``evaluate``), error
analysis of a tagger on labelled data (``analysis``), and how scores are shown: fixed-width and
rich tables (``tables``), pictures from plain values (``plots``, matplotlib, optional).

    from crftag.scoring import score_sentences
    scores = score_sentences(tagger, sentences)
"""

import importlib

__all__ = ["headline", "score", "score_sentences"]
_EXPORTS = {name: "crftag.scoring.evaluate" for name in __all__}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crftag.scoring' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
