"""crftag: sequence labelling with a BiLSTM-CRF.

    import crftag
    tagger = crftag.load("en-ner")  # or a run directory, model.pt, model.npz, model.onnx
    tagger.predict(["John lives in Berlin ."])

Importing the package is cheap: nothing here imports torch (``load``, ``Tagger`` and
``Prediction`` are loaded on first use), so ``crftag --help`` starts fast. ``load`` takes what
``-m`` takes and picks the backend as ``-m`` does: an exported model (``.npz``) or a bundled
name runs on NumPy and never imports torch, an ``.onnx`` file on ONNX Runtime, a checkpoint on
torch; every tagger answers the same calls. Importing it changes nothing in the program's
environment (``os.environ``): the ``crftag`` command sets how its own process shares the cores
(crftag/runtime/cores.py), a program that imports the library keeps its own settings.
"""

__version__ = "0.1.0"
__all__ = ["Prediction", "Tagger", "__version__", "load"]


def __getattr__(name: str):
    if name == "load":
        from crftag.inference.loading import load

        return load
    if name == "Tagger":
        from crftag.inference.tagger import Tagger

        return Tagger
    if name == "Prediction":
        from crftag.inference.records import Prediction

        return Prediction
    raise AttributeError(f"module 'crftag' has no attribute {name!r}")
