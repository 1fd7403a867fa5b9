"""The ``tune`` section of a config: the search space of ``crftag tune`` (docs/tuning.md).

Each key but ``search`` names the config key it searches (``lr`` is ``train.lr``); a range is
``[low, high]`` (the learning rate drawn on a log scale, the dropouts uniformly), a list of
sizes or names is the choices. ``search`` says which of them a study draws: the others keep the
config's own value. A section that sets some keys narrows the default space; one that sets
``search`` replaces it. The values are checked against the keys they search when a study starts
(:func:`crftag.training.search_space.check_space`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SEARCHED_KEYS", "TuneConfig"]

# Each tune key: the config key it searches, and how values are drawn.
SEARCHED_KEYS = {
    "lr": ("train", "lr", "log"),
    "dropout": ("model", "dropout", "uniform"),
    "word_dropout": ("train", "word_dropout", "uniform"),
    "hidden_size": ("model", "hidden_size", "choice"),
    "char_dim": ("model", "char_dim", "choice"),
    "char_size": ("model", "char_size", "choice"),
    "batch_size": ("train", "batch_size", "choice"),
    "optimizer": ("train", "optimizer", "choice"),
}


def _key(default: Any, doc: str) -> Any:
    return field(default_factory=lambda: list(default), metadata={"doc": doc})


@dataclass(frozen=True)
class TuneConfig:
    """What `crftag tune` searches: ranges and choices for the keys it draws."""

    search: list[str] = _key(
        list(SEARCHED_KEYS),
        "The keys below that a study draws; the others keep the config's value. With "
        "`train.init_from`, the model's sizes are its own and are not drawn.",
    )
    lr: list[float] = _key([0.0005, 0.05], "`train.lr`: [low, high], drawn on a log scale.")
    dropout: list[float] = _key([0.1, 0.6], "`model.dropout`: [low, high].")
    word_dropout: list[float] = _key([0.0, 0.2], "`train.word_dropout`: [low, high].")
    hidden_size: list[int] = _key([64, 128, 200, 256], "`model.hidden_size`: the choices.")
    char_dim: list[int] = _key([25, 30, 50], "`model.char_dim`: the choices.")
    char_size: list[int] = _key([25, 30, 50], "`model.char_size`: the choices.")
    batch_size: list[int] = _key([8, 16, 32], "`train.batch_size`: the choices.")
    optimizer: list[str] = _key(["sgd", "adam"], "`train.optimizer`: the choices.")
