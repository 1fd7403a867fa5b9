"""A stopped pretraining's resume file (the one format of :mod:`crftag.training.state`), read
for ``crftag pretrain --resume``: what only a pretraining's holds (its settings, text files,
characters, time budget and the digest of its text), its run state, and the shapes of its
weights, checked before the text is read or the models are built, so a damaged or hostile file
is one line naming it."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint_schema import check_weights
from crftag.training.pretrain_objectives import objective_named
from crftag.training.pretrain_task import PretrainSettings
from crftag.training.state import check_resume_parts, check_run_state, read_resume

__all__ = ["StoppedPretraining", "read_stopped_pretraining"]


@dataclass(frozen=True)
class StoppedPretraining:
    resume: dict  # the file as read
    path: str
    settings: PretrainSettings
    paths: list[str]  # the text files
    symbols: list[str]  # the characters of the models' vocabulary
    minutes: float | None  # the time budget, all processes together
    text_digest: str


def read_stopped_pretraining(directory: str) -> StoppedPretraining:
    """The resume file of the pretraining stopped in ``directory``, checked as far as it can be
    without the text and the models (:func:`crftag.training.state.check_resume_fits` checks the
    rest once they are built)."""
    resume, path = read_resume(directory, "pretrain")
    settings = _settings(resume.get("settings"), path)
    objective = objective_named(settings.objective)  # a removed one: refused before any reading
    check_resume_parts(resume, path)
    parts = {
        "paths": resume.get("paths"),
        "symbols": resume.get("symbols"),
        "minutes": resume.get("minutes"),
        "fingerprint.text": resume["fingerprint"].get("text"),
        "state_dict": resume.get("state_dict"),
    }
    for key, (fits, expected) in _OWN_PARTS.items():
        if not fits(parts[key]):
            raise CrftagError(f"{path}: {key}: expected {expected}")
    check_run_state(resume["run_state"], settings.epochs, "--epochs", path)
    with torch.device("meta"):  # sizes checked before anything is allocated
        described = objective.build(len(parts["symbols"]), settings.char_dim, settings.hidden_size)
    check_weights(resume["state_dict"], described.state_dict(), path)
    return StoppedPretraining(
        resume,
        path,
        settings,
        parts["paths"],
        parts["symbols"],
        parts["minutes"],
        parts["fingerprint.text"],
    )


def _settings(stored, path: str) -> PretrainSettings:
    """The settings a resume file holds, each of its field's type (an integer size, batch
    size or epoch count of 1 or more; a finite rate, clip or share of 0 or more)."""
    fields = dataclasses.fields(PretrainSettings)
    if not isinstance(stored, dict) or set(stored) != {f.name for f in fields}:
        names = ", ".join(f.name for f in fields)
        raise CrftagError(f"{path}: settings: expected the settings {names}")
    for name, kind in ((f.name, type(f.default)) for f in fields):
        value = stored[name]
        if kind is float:
            fits = _number(value) and value >= 0
        else:
            fits = type(value) is kind and (kind is str or name == "seed" or value >= 1)
        if not fits:
            raise CrftagError(
                f"{path}: settings.{name}: expected {kind.__name__}, got {value!r:.40}"
            )
    return PretrainSettings(**stored)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


_OWN_PARTS = {  # key -> (whether a value fits, what it should be)
    "paths": (lambda value: _strings(value) and bool(value), "a list of text files"),
    "symbols": (_strings, "a list of characters"),
    "minutes": (lambda value: value is None or _number(value) and value > 0, "none or minutes"),
    "fingerprint.text": (lambda value: isinstance(value, str), "the digest of the text"),
    "state_dict": (lambda value: isinstance(value, dict), "the models' weights"),
}
