"""crftag: sequence labelling with a BiLSTM-CRF.

    from crftag import Tagger
    tagger = Tagger.load("runs/sample")
    tagger.predict(["John lives in Berlin ."])

Importing the package is cheap: nothing here imports torch (``Tagger`` and ``Prediction`` are
loaded on first use), so ``crftag --help`` starts fast.
"""

__version__ = "0.1.0"
__all__ = ["Prediction", "Tagger", "__version__"]


def __getattr__(name: str):
    if name == "Tagger":
        from crftag.inference.tagger import Tagger

        return Tagger
    if name == "Prediction":
        from crftag.inference.records import Prediction

        return Prediction
    raise AttributeError(f"module 'crftag' has no attribute {name!r}")
