"""Model files: the self-contained checkpoint (``checkpoint``), what one must hold, checked
before anything is built from it (``checkpoint_schema``), and the bundled models that ``-m NAME``
selects (``registry``).

    from crftag.modelfiles import load_model, save_model

The checkpoint's names are loaded on first use, as they import torch; the registry's do not.
"""

import importlib

__all__ = ["BUNDLED_MODELS", "LoadedModel", "load_model", "resolve_model_path", "save_model"]
_EXPORTS = {
    "BUNDLED_MODELS": "crftag.modelfiles.registry",
    "resolve_model_path": "crftag.modelfiles.registry",
    "LoadedModel": "crftag.modelfiles.checkpoint",
    "load_model": "crftag.modelfiles.checkpoint",
    "save_model": "crftag.modelfiles.checkpoint",
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crftag.modelfiles' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
