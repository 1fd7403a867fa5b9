"""crftag: sequence labelling with a BiLSTM-CRF.

    from crftag import Tagger
    tagger = Tagger.load("runs/sample")
    tagger.predict(["John lives in Berlin ."])

Importing the package is cheap: nothing here imports torch (``Tagger``, ``Prediction`` and
``load_tagger`` are loaded on first use), so ``crftag --help`` starts fast. ``load_tagger``
picks the tagger as ``-m`` does: an exported model (``.npz``) or a bundled name runs on NumPy
and never imports torch; a checkpoint runs on torch. Importing it changes nothing in the
program's environment (``os.environ``): the ``crftag`` command sets how its own process shares
the cores (crftag/runtime/cores.py), a program that imports the library keeps its own settings.
"""

__version__ = "0.1.0"
__all__ = ["Prediction", "Tagger", "__version__", "load_tagger"]


def __getattr__(name: str):
    if name == "Tagger":
        from crftag.inference.tagger import Tagger

        return Tagger
    if name == "load_tagger":
        from crftag.inference.loading import load_tagger

        return load_tagger
    if name == "Prediction":
        from crftag.inference.records import Prediction

        return Prediction
    raise AttributeError(f"module 'crftag' has no attribute {name!r}")
