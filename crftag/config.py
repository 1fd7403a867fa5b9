"""Training configuration: YAML into frozen dataclasses, validated on load.

A config file has four sections, ``data``, ``vocab``, ``model`` and ``train``; every key and its
default is a field below, and the comment beside it says what it does. An unknown key is an error
naming the nearest valid key; a value of the wrong type is an error naming the key and the type.
Paths in the file are relative to the file; paths given with ``--set`` are relative to the current
directory. Nothing changes a config after it is loaded.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import types
import typing
from dataclasses import dataclass, field
from typing import Any

import yaml

from crftag.data.conll import ColumnSpec, detect_format
from crftag.errors import CrftagError

__all__ = [
    "FILE_FORMATS",
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "SPAN_SCHEMES",
    "TRAIN_SCHEMES",
    "Config",
    "DataConfig",
    "ModelConfig",
    "TrainConfig",
    "VocabConfig",
    "load_config",
]

# The one list of each enumeration; the CLI's choices and the config's are built from these.
FILE_FORMATS = ("conll", "conllu")  # labelled column files
INPUT_FORMATS = ("text", "tokens", *FILE_FORMATS)  # what predict reads
OUTPUT_FORMATS = ("conll", "jsonl")  # what predict writes
SPAN_SCHEMES = ("iob1", "iob2", "bioes")  # tag schemes of entity spans; "none" is one tag a token
TRAIN_SCHEMES = ("bioes", "iob2")  # schemes a model can be trained in


def _choice(*options: str) -> dict:
    return {"choices": options}


def _at_least(minimum: int) -> dict:
    return {"minimum": minimum}


def _probability(*, one_allowed: bool) -> dict:
    return {"probability": {"one_allowed": one_allowed}}


@dataclass(frozen=True)
class DataConfig:
    # training file (CoNLL or CoNLL-U), or a list of files read one after the other (train and
    # dev together for a final model trained a fixed number of epochs, with dev: null)
    train: str | list[str]
    dev: str | None = None  # development file: model selection and early stopping
    test: str | None = None  # test file, scored once with the best model at the end
    format: str = field(default="auto", metadata=_choice("auto", *FILE_FORMATS))
    word_column: int | None = None  # 0-based; default first column (CoNLL), FORM (CoNLL-U)
    tag_column: int | None = None  # 0-based, may be negative; default last column (CoNLL), UPOS
    tag_scheme: str = field(  # scheme of the files' tags; auto detects it from the training file
        default="auto", metadata=_choice("auto", *SPAN_SCHEMES, "none")
    )
    # scheme the model is trained in; predictions are always written in IOB2
    train_scheme: str = field(default="bioes", metadata=_choice(*TRAIN_SCHEMES))

    def column_spec(self, path: str) -> ColumnSpec:
        """How to read ``path`` under these column settings (``format: auto`` looks at it)."""
        file_format = self.format if self.format != "auto" else detect_format(path)
        return ColumnSpec.for_format(file_format, self.word_column, self.tag_column)


@dataclass(frozen=True)
class VocabConfig:
    min_freq: int = 1  # words seen fewer times in training are unknown
    lowercase: bool = False  # look words up lower-cased
    normalize_digits: bool = True  # look words up with every digit replaced by 0
    # Refuse, before allocating embeddings, a vocabulary larger than this many words
    max_size: int = field(default=2_000_000, metadata=_at_least(1))
    # Add up to this many words of model.embeddings (in file order: most frequent first for
    # GloVe) beyond the training words, so test words training never saw keep their vectors
    embedding_words: int = 0


@dataclass(frozen=True)
class ModelConfig:
    # bilstm: embeddings, a character encoder and a BiLSTM give the emissions; features: a linear
    # CRF on hashed sparse token features (word, affixes, shape, casing, neighbours at +-2)
    encoder: str = field(default="bilstm", metadata=_choice("bilstm", "features"))
    feature_buckets: int = field(  # features: hash space; more buckets, fewer collisions
        default=2**20, metadata=_at_least(1)
    )
    word_dim: int = field(default=100, metadata=_at_least(1))  # word embedding size
    char_encoder: str = field(default="cnn", metadata=_choice("cnn", "lstm", "none"))
    char_dim: int = field(default=30, metadata=_at_least(1))  # character embedding size
    char_size: int = field(
        default=30, metadata=_at_least(1)
    )  # CNN filters, or LSTM units per direction
    char_kernel: int = field(default=3, metadata=_at_least(1))  # CNN window width
    # size of an embedding of each word's casing class (all lower, initial upper, numeric, ...);
    # 0 = none. Helps with lower-cased word vectors such as GloVe's
    casing_dim: int = field(default=0, metadata=_at_least(0))
    hidden_size: int = field(default=200, metadata=_at_least(1))  # word BiLSTM units per direction
    num_layers: int = field(default=1, metadata=_at_least(1))  # word BiLSTM layers
    # on the embeddings and the BiLSTM output
    dropout: float = field(default=0.5, metadata=_probability(one_allowed=False))
    # one dropout mask per sentence, shared by its words (variational or "locked" dropout, as
    # flair's), instead of a fresh mask for every word
    locked_dropout: bool = False
    # each token also sees the mean of the BiLSTM states of every occurrence of its word
    # (lower-cased) in its document; needs document markers (-DOCSTART-, # newdoc) to help
    document_context: bool = False
    # units of a tanh layer between the BiLSTM output (with document context, the state joined
    # with its document mean) and the tag scores, as in Lample et al.'s code; 0 = none
    hidden_layer: int = field(default=0, metadata=_at_least(0))
    constrained: bool = True  # forbid transitions the span scheme makes impossible
    embeddings: str | None = None  # pretrained vectors, GloVe or word2vec text, plain or .gz
    freeze_embeddings: bool = False  # keep the word embeddings fixed during training


@dataclass(frozen=True)
class TrainConfig:
    optimizer: str = field(default="sgd", metadata=_choice("sgd", "adam"))
    lr: float = 0.015  # initial learning rate
    momentum: float = 0.9  # SGD momentum
    lr_decay: float = 0.05  # SGD: lr / (1 + lr_decay * (epoch - 1)), epochs from 1; Ma & Hovy 2016
    weight_decay: float = 0.0
    # the word embeddings' learning rate as a multiple of train.lr: 1 fine-tunes them like every
    # other weight, 0 keeps them as loaded; in between, the training words' vectors stay nearer
    # the pretrained space that the added words (those training never saw) keep
    embedding_lr_scale: float = 1.0
    clip_grad_norm: float | None = 5.0  # max gradient norm; null turns clipping off
    batch_size: int = field(default=10, metadata=_at_least(1))  # sentences per minibatch
    epochs: int = field(
        default=50, metadata=_at_least(1)
    )  # upper bound; early stopping usually ends sooner
    patience: int = 5  # epochs without a better dev score before stopping; 0 = never stop early
    seed: int = 1  # seeds Python and torch; CPU runs with one seed are reproducible
    # nll summed over the batch (Ma & Hovy) or averaged over sentences
    loss_reduction: str = field(default="sum", metadata=_choice("sum", "mean"))
    # Replace a word seen once in training by the unknown word with this probability (Lample
    # et al. 2016), so the model learns what to do with words it has never seen
    word_dropout: float = field(default=0.0, metadata=_probability(one_allowed=True))
    # Stochastic weight averaging: from this epoch on, dev scoring, model selection and the saved
    # model use the mean of the weights at the end of every epoch since (training goes on from
    # the raw weights); 0 = off
    average_from: int = field(default=0, metadata=_at_least(0))
    # bfloat16 autocast for the encoder (fast on recent GPUs); the CRF stays in float32
    amp: bool = False


@dataclass(frozen=True)
class Config:
    data: DataConfig
    vocab: VocabConfig = field(default_factory=VocabConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, source: str = "<config>") -> Config:
        """Build and validate a config from a plain dict (paths taken as they are)."""
        return _build(cls, raw, source, prefix="")


_PATH_KEYS = {"data": ("train", "dev", "test"), "model": ("embeddings",)}


def load_config(path: str, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read ``path``, apply ``--set section.key=value`` overrides, validate."""
    if os.path.isdir(path):
        raise CrftagError(f"{path}: is a directory, expected a YAML config file")
    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
    except FileNotFoundError:
        raise CrftagError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise CrftagError(f"{path}: not valid UTF-8") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise CrftagError(f"{where}: {problem}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise CrftagError(f"{path}: expected a mapping of sections (data, vocab, model, train)")
    base = os.path.dirname(os.path.abspath(path))
    for section, keys in _PATH_KEYS.items():
        values = raw.get(section)
        if isinstance(values, dict):
            raw[section] = {
                key: _relative_to(base, value) if key in keys else value
                for key, value in values.items()
            }
    for override in overrides:
        _apply_override(raw, override)
    return _build(Config, raw, path, prefix="")


def _relative_to(base: str, value: Any) -> Any:
    if isinstance(value, list):
        return [_relative_to(base, item) for item in value]
    if isinstance(value, str) and value != "-" and not os.path.isabs(value):
        return os.path.normpath(os.path.join(base, value))
    return value


def _apply_override(raw: dict, override: str) -> None:
    key, equals, text = override.partition("=")
    parts = key.strip().split(".")
    if not equals or len(parts) != 2 or not all(parts):
        raise CrftagError(f"--set {override}: expected section.key=value, e.g. train.lr=0.01")
    section, name = parts
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = text
    if section not in raw or raw[section] is None:
        raw[section] = {}
    if not isinstance(raw[section], dict):
        raise CrftagError(f"--set {override}: section {section!r} is not a mapping")
    raw[section][name] = value


def _build(cls: type, raw: Any, source: str, prefix: str) -> Any:
    where = prefix.rstrip(".") or "top level"
    if not isinstance(raw, dict):
        raise CrftagError(f"{source}: {where}: expected a mapping, got {_describe(raw)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key in raw:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.5)
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else ""
            valid = ", ".join(fields)
            raise CrftagError(f"{source}: unknown key '{prefix}{key}'{hint} (valid: {valid})")
    values = {}
    for name, spec in fields.items():
        if name not in raw:
            missing = spec.default is dataclasses.MISSING and (
                spec.default_factory is dataclasses.MISSING
            )
            if missing:
                raise CrftagError(f"{source}: missing required key '{prefix}{name}'")
            continue
        value = raw[name]
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            values[name] = _build(hint, value if value is not None else {}, source, f"{name}.")
        else:
            values[name] = _check_value(value, hint, spec, source, f"{prefix}{name}")
    return cls(**values)


def _check_value(value: Any, hint: Any, spec: dataclasses.Field, source: str, key: str) -> Any:
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    optional = type(None) in allowed
    lists = [t for t in allowed if typing.get_origin(t) is list]
    if lists and isinstance(value, list):
        item = typing.get_args(lists[0])[0]
        wrong = [v for v in value if not isinstance(v, item)]
        if not value or wrong:
            got = f"got {_describe(wrong[0])} in the list" if wrong else "got an empty list"
            raise CrftagError(f"{source}: {key}: expected a list of {item.__name__}, {got}")
        return value
    base = next(t for t in allowed if t is not type(None))
    if value is None:
        if optional:
            return None
        raise CrftagError(f"{source}: {key}: expected {base.__name__}, got null")
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    ok = isinstance(value, base) and not (base in (int, float) and isinstance(value, bool))
    if not ok:
        raise CrftagError(f"{source}: {key}: expected {base.__name__}, got {_describe(value)}")
    choices = spec.metadata.get("choices")
    if choices and value not in choices:
        raise CrftagError(f"{source}: {key}: expected one of {'|'.join(choices)}, got {value!r}")
    # Every number is a size, rate or count, so negative values are mistakes; column indices
    # count from the end when negative.
    minimum = spec.metadata.get("minimum", None if key.endswith("_column") else 0)
    if base in (int, float) and minimum is not None and value < minimum:
        raise CrftagError(f"{source}: {key}: expected a value >= {minimum}, got {value}")
    probability = spec.metadata.get("probability")
    if probability is not None and (value > 1 or (value == 1 and not probability["one_allowed"])):
        interval = "[0, 1]" if probability["one_allowed"] else "[0, 1)"
        raise CrftagError(f"{source}: {key}: expected a probability in {interval}, got {value}")
    return value


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"
