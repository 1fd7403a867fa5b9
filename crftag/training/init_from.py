"""Starting from a trained model (``train.init_from``), and rehearsing its old training data
(``train.rehearsal``).

The new model is the old one grown: the old vocabularies keep every symbol at its index and the
new data's words, characters and tags are appended, so every weight of the old model is the
leading block of the new one's and is copied there. New rows (words, characters, tags, their
transitions) start as a new model's do; the scheme's constraints are rebuilt for the merged tag
set by :func:`crftag.checkpoint.build_model`.
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys

import torch

from crftag.checkpoint import LoadedModel, load_model
from crftag.config import Config, ModelConfig
from crftag.data.conll import Sentence
from crftag.data.vocab import Vocabularies
from crftag.errors import CrftagError
from crftag.nn.taggers import CRFTagger
from crftag.registry import BUNDLED_MODELS

__all__ = [
    "ARCHITECTURE_KEYS",
    "check_architecture",
    "copy_weights",
    "load_base",
    "merge_vocabularies",
    "rehearsal_file",
]

# Model keys that change no weight's meaning, so a model trained with other values is a fine
# start: regularisation, the constraints (rebuilt), and where the vectors come from.
_FREE_MODEL_KEYS = ("dropout", "locked_dropout", "constrained", "embeddings", "freeze_embeddings")
ARCHITECTURE_KEYS = tuple(
    [f"model.{f.name}" for f in dataclasses.fields(ModelConfig) if f.name not in _FREE_MODEL_KEYS]
    + ["vocab.lowercase", "vocab.normalize_digits"]  # how words are looked up in the old rows
)
# The CRF's constraint buffers follow the tag set; build_model makes them for the merged one.
_REBUILT = ("crf.allowed", "crf.allowed_start", "crf.allowed_end")


def load_base(config: Config) -> LoadedModel:
    """The model ``train.init_from`` names. Config paths are made relative to the config file,
    so a bundled model's name arrives as ``DIR/en-ner``: a path that does not exist and ends in
    a bundled name is that name."""
    name = config.train.init_from
    assert name is not None
    if not os.path.exists(name) and os.path.basename(name) in BUNDLED_MODELS:
        name = os.path.basename(name)
    try:
        return load_model(name)
    except CrftagError as error:
        raise CrftagError(f"train.init_from: {error}") from None


def check_architecture(config: Config, base: LoadedModel, train_scheme: str) -> None:
    """One-line error naming every architecture key on which ``config`` and ``base`` differ."""
    mine, theirs = config.to_dict(), base.config.to_dict()
    differ = []
    for key in ARCHITECTURE_KEYS:
        section, name = key.split(".")
        if mine[section][name] != theirs[section][name]:
            differ.append(f"{key} {mine[section][name]} (model: {theirs[section][name]})")
    if train_scheme != base.train_scheme:
        differ.append(f"data.train_scheme {train_scheme} (model: {base.train_scheme})")
    if differ:
        raise CrftagError(
            f"train.init_from {config.train.init_from}: the config's architecture differs from "
            f"the model's on {', '.join(differ)}; set these keys to the model's values"
        )


def merge_vocabularies(base: Vocabularies, new: Vocabularies) -> Vocabularies:
    """``base``'s vocabularies with ``new``'s symbols that it lacks appended (words, characters;
    tags sorted), so every old symbol keeps its index."""
    merged = Vocabularies.from_state(base.to_state())
    merged.words.extend(new.words.symbols)
    merged.chars.extend(new.chars.symbols)
    merged.tags.extend(sorted(set(new.tags.symbols) - set(base.tags.symbols)))
    added = {
        kind: len(getattr(merged, kind)) - len(getattr(base, kind))
        for kind in ("words", "chars", "tags")
    }
    new_tags = " ".join(merged.tags.symbols[len(base.tags) :])
    print(
        f"init_from: {added['words']} new words, {added['chars']} new characters, "
        f"{added['tags']} new tags{': ' + new_tags if new_tags else ''}",
        file=sys.stderr,
    )
    return merged


def copy_weights(model: CRFTagger, base: CRFTagger) -> None:
    """Copy every weight of ``base`` into the leading block of ``model``'s (the old words',
    characters' and tags' rows); the rest of ``model`` keeps its fresh initialisation."""
    state = model.state_dict()
    with torch.no_grad():
        for name, old in base.state_dict().items():
            if name in _REBUILT:
                continue
            target = state[name]
            if any(o > n for o, n in zip(old.shape, target.shape, strict=True)):
                raise AssertionError(f"{name}: {tuple(old.shape)} does not fit {target.shape}")
            target[tuple(slice(0, size) for size in old.shape)] = old.to(target.dtype)
    model.load_state_dict(state)


def rehearsal_file(config: Config, count: int) -> tuple[str, list[Sentence]]:
    """``train.rehearsal`` as a training file: ``count`` of its sentences (all, if it has no
    more), drawn once with ``train.seed`` and kept in file order."""
    path = config.train.rehearsal
    assert path is not None
    sentences = config.data.read(path, unknown_tags=True)
    if count < len(sentences):
        chosen = sorted(random.Random(config.train.seed).sample(range(len(sentences)), count))
        sentences = [sentences[i] for i in chosen]
    print(f"rehearsal: {len(sentences)} sentences of {path}", file=sys.stderr)
    return path, sentences
