"""Starting from a trained model (``train.init_from``), and rehearsing its old training data
(``train.rehearsal``).

The new model is the old one grown: the old vocabularies keep every symbol at its index and the
new data's words, characters and tags are appended, so every weight of the old model is the
leading block of the new one's and is copied there. New rows (words, characters, tags, their
transitions) start as a new model's do; the scheme's constraints are rebuilt for the merged tag
set by :func:`crftag.nn.taggers.build_model`.
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys

import torch

from crftag.config.sections import TRAIN_SCHEMES, Config, ModelConfig, read_config
from crftag.data.conll import Sentence
from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.errors import CrftagError
from crftag.features.registry import FEATURES, vocabularies_from_state
from crftag.modelfiles.checkpoint import LoadedModel, load_model
from crftag.modelfiles.registry import BUNDLED_MODELS
from crftag.nn.taggers import CRFTagger
from crftag.training.label_map import plan_tags

__all__ = [
    "ARCHITECTURE_KEYS",
    "base_defaults",
    "check_architecture",
    "copy_weights",
    "load_base",
    "load_training_config",
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
# Keys a base model's own value is not taken for: its vectors' path is the machine it was
# trained on's, and the new words' vectors are a choice for the new data; and those of the
# features that take what the new config gives (``Feature.inherited``).
_NOT_INHERITED = ("embeddings", "freeze_embeddings")
_NOT_INHERITED += tuple(f.key.split(".", 1)[1] for f in FEATURES if not f.inherited)
# The CRF's constraint buffers follow the tag set; build_model makes them for the merged one.
_REBUILT = ("crf.allowed", "crf.allowed_start", "crf.allowed_end")
# The dimensions of each weight that run over the tags (the others run over words, characters
# or units, whose old rows lead the new model's).
_TAG_DIMENSIONS = {
    "projection.weight": (0,),
    "projection.bias": (0,),
    "crf.transitions": (0, 1),
    "crf.start_transitions": (0,),
    "crf.end_transitions": (0,),
    "weights": (1,),  # the feature CRF's (buckets + 1, tags)
}


def load_training_config(
    path: str, overrides: list[str] | tuple[str, ...] = ()
) -> tuple[Config, LoadedModel | None]:
    """(config, the model ``train.init_from`` names or None): the config as
    :func:`crftag.config.sections.load_config` reads it, where a config with ``train.init_from``
    takes the model's architecture for every key it does not set (:func:`base_defaults`); keys
    it sets to other values are refused when training starts (:func:`check_architecture`).
    The file is read once and the model loaded once, here: training starts from the model's
    weights and vocabularies (``base`` of :func:`crftag.training.run.train`)."""
    source = read_config(path, overrides)
    config = source.build()
    if config.train.init_from is None:
        return config, None
    base = load_base(config)
    return source.build(base_defaults(base)), base


def base_defaults(base: LoadedModel) -> dict:
    """The base model's architecture as config values (``{section: {key: value}}``): its whole
    ``model`` section but the vectors, how it looks words up, and its training scheme."""
    theirs = base.config.to_dict()
    defaults = {
        "model": {k: v for k, v in theirs["model"].items() if k not in _NOT_INHERITED},
        "vocab": {k: theirs["vocab"][k] for k in ("lowercase", "normalize_digits")},
    }
    if base.train_scheme in TRAIN_SCHEMES:
        defaults["data"] = {"train_scheme": base.train_scheme}
    return defaults


def load_base(config: Config) -> LoadedModel:
    """The model ``train.init_from`` names. Config paths are made relative to the config file,
    so a bundled model's name arrives as ``DIR/en-ner``: a path that does not exist and ends in
    a bundled name is that name."""
    name = config.train.init_from
    assert name is not None
    if not os.path.exists(name) and os.path.basename(name) in BUNDLED_MODELS:
        name = os.path.basename(name)
    try:
        return load_model(name)  # a checkpoint, or an export rebuilt in torch
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
            f"the model's on {', '.join(differ)}; leave these keys out (the model's values are "
            "taken) or set them to the model's values"
        )


def _merged_resources(merged: Vocabularies, new: Vocabularies) -> dict:
    """Each feature's resource: the base model's (a copy, in ``merged``), or the new one for a
    feature not :attr:`~crftag.features.base.Feature.inherited`, in registry order."""
    resources = {}
    for feature in FEATURES:
        resource = feature.resource(merged if feature.inherited else new)
        if resource is not None:
            resources[feature.vocabulary_key] = resource
    return resources


def merge_vocabularies(base: Vocabularies, new: Vocabularies, config: Config) -> Vocabularies:
    """``base``'s vocabularies with ``new``'s symbols that it lacks appended (words, characters),
    so every old symbol keeps its index; the tags as :func:`plan_tags` lays them out under
    ``train.label_map`` and ``train.drop_old_labels``."""
    merged = vocabularies_from_state(base.to_state())
    merged.words.extend(new.words.symbols)
    merged.chars.extend(new.chars.symbols)
    merged.resources = _merged_resources(merged, new)
    tags = plan_tags(
        base.tags.symbols,
        new.tags.symbols,
        config.train.label_map,
        drop_old=config.train.drop_old_labels,
    )
    merged.tags = Vocabulary(tags, has_unknown=base.tags.has_unknown)
    added = {
        kind: len(getattr(merged, kind)) - len(getattr(base, kind)) for kind in ("words", "chars")
    }
    new_tags = [tag for tag in tags if tag not in base.tags]
    dropped = [tag for tag in base.tags.symbols if tag not in merged.tags]
    print(
        f"init_from: {added['words']} new words, {added['chars']} new characters, "
        f"{len(new_tags)} new tags{': ' + ' '.join(new_tags) if new_tags else ''}"
        f"{'; dropped ' + ' '.join(dropped) if dropped else ''}",
        file=sys.stderr,
    )
    return merged


def copy_weights(
    model: CRFTagger, base: CRFTagger, sources: list[int | None] | None = None
) -> None:
    """Copy every weight of ``base`` into ``model``: along the words, characters and units, into
    the leading block; along the tags, tag ``i`` of ``model`` from tag ``sources[i]`` of ``base``
    (:func:`crftag.training.label_map.tag_sources`; by default the old tags lead the new
    ones). The rest of ``model`` keeps its fresh initialisation."""
    state = model.state_dict()
    with torch.no_grad():
        for name, old in base.state_dict().items():
            if name in _REBUILT:
                continue
            target = state[name]
            dimensions = _TAG_DIMENSIONS.get(name, ()) if sources is not None else ()
            if any(
                o > n
                for d, (o, n) in enumerate(zip(old.shape, target.shape, strict=True))
                if d not in dimensions
            ):
                raise AssertionError(f"{name}: {tuple(old.shape)} does not fit {target.shape}")
            _copy_block(target, old.to(target.dtype), dimensions, sources)
    model.load_state_dict(state)


def _copy_block(
    target: torch.Tensor, old: torch.Tensor, dimensions: tuple, sources: list[int | None] | None
) -> None:
    """``target``'s leading block of ``old``'s shape set to ``old``, except along
    ``dimensions``, where entry ``i`` comes from ``old``'s entry ``sources[i]`` (if any)."""
    if not dimensions:
        target[tuple(slice(0, size) for size in old.shape)] = old
        return
    assert sources is not None
    rows = torch.tensor([i for i, s in enumerate(sources) if s is not None], dtype=torch.long)
    picked = torch.tensor([s for s in sources if s is not None], dtype=torch.long)
    if not len(rows):
        return
    for dimension in dimensions:
        old = old.index_select(dimension, picked)
    # Each tag dimension gets the row indices, shaped to broadcast against the other tag
    # dimensions (transitions: rows down, rows across).
    index = []
    for dimension, size in enumerate(old.shape):
        if dimension in dimensions:
            shape = [1] * len(dimensions)
            shape[dimensions.index(dimension)] = -1
            index.append(rows.view(shape))
        else:
            index.append(slice(0, size))
    target[tuple(index)] = old


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
