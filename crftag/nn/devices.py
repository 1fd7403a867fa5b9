"""The torch device a ``--device`` choice means (``auto``, ``cpu``, ``cuda``, ``cuda:N``): chosen
once, where a command starts, and handed down to everything below it explicitly. Importing this
module costs no torch import; resolving a choice does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crftag.errors import CrftagError

if TYPE_CHECKING:
    import torch

__all__ = ["resolve_device"]


def resolve_device(choice: str) -> torch.device:
    """``auto``: the GPU where torch sees one, else the CPU; a CUDA choice without a CUDA
    device is a one-line error."""
    import torch

    if choice.startswith("cuda") and not torch.cuda.is_available():
        raise CrftagError(f"--device {choice}: no CUDA device is available; use --device cpu")
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)
