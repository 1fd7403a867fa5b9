"""Scoring: entity and token scores of predicted against gold tags (``evaluate``), a model
scored on labelled files as ``crftag eval`` scores it (``files``), error analysis of a tagger on
labelled data (``analysis``), and how scores are shown: fixed-width and rich tables (``tables``,
``analysis_tables``), pictures from plain values (``plots``, matplotlib, optional).

    from crftag.scoring import evaluate_files, score_sentences
    [result] = evaluate_files("en-ner", ["test.conll"])
    scores = score_sentences(tagger, sentences)
"""

import importlib

__all__ = ["FileScores", "evaluate_files", "headline", "score", "score_sentences"]
_EXPORTS = {
    **{name: "crftag.scoring.evaluate" for name in ("headline", "score", "score_sentences")},
    **{name: "crftag.scoring.files" for name in ("FileScores", "evaluate_files")},
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crftag.scoring' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
