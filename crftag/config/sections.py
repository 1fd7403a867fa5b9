"""Training configuration: YAML into frozen dataclasses, validated on load.

A config file has four sections, ``data``, ``vocab``, ``model`` and ``train``; every key is a
field below, with its default, its description and its checks (docs/config.md is generated from
them by :mod:`crftag.config.reference`). An unknown key is an error naming the nearest valid
key; a value of the wrong type, a float that is not finite or a number outside the key's bounds
is an error naming the key, and every mistake is reported at once (:mod:`crftag.config.loading`
reads the file and checks the values). Paths in the file are relative to the file; paths given
with ``--set`` are relative to the current directory. Nothing changes a config after it is
loaded.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from crftag.config.augment import AugmentConfig
from crftag.config.corpus_sections import DataConfig, VocabConfig
from crftag.config.distill import DistillConfig
from crftag.config.keys import (
    _WIDTH,
    INPUT_FORMATS,
    MAX_BATCH,
    MAX_BUCKETS,
    MAX_DROPOUT,
    MAX_ENCODER,
    MAX_EPOCHS,
    MAX_LAYERS,
    MAX_SEED,
    MAX_WIDTH,
    MAX_WORD_CHARS_LIMIT,
    OUTPUT_FORMATS,
    SPAN_SCHEMES,
    TRAIN_SCHEMES,
    _key,
)
from crftag.config.loading import SHOWN_CHARS, apply_override, build, read_yaml_file, relative_to
from crftag.config.removed import drop_removed_defaults, removed_key_errors
from crftag.config.tune import TuneConfig
from crftag.data.encoder_files import cached_snapshot, hub_cache
from crftag.data.subwords import POOLINGS
from crftag.errors import CrftagError

__all__ = [
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "SPAN_SCHEMES",
    "TRAIN_SCHEMES",
    "Config",
    "ConfigSource",
    "DataConfig",
    "ModelConfig",
    "TrainConfig",
    "VocabConfig",
    "load_config",
    "read_config",
]


@dataclass(frozen=True)
class ModelConfig:
    """The network: what gives the emission scores, and the CRF on top."""

    encoder: str = _key(
        "bilstm",
        "`bilstm`: embeddings, a character encoder and a BiLSTM; `features`: a linear CRF on "
        "hashed sparse token features (docs/feature-crf.md).",
        choices=("bilstm", "features"),
    )
    feature_buckets: int = _key(
        2**20,
        "`features`: hash space; more buckets, fewer collisions.",
        minimum=1,
        maximum=MAX_BUCKETS,
    )
    word_dim: int | None = _key(
        None, "Word embedding size; null: that of `model.embeddings`, else 100.", **_WIDTH
    )
    char_encoder: str = _key(
        "cnn",
        "`cnn` (Ma & Hovy 2016), `lstm` (Lample et al. 2016) or `none`.",
        choices=("cnn", "lstm", "none"),
    )
    char_dim: int = _key(30, "Character embedding size.", minimum=1, maximum=MAX_WIDTH)
    char_size: int = _key(
        30, "CNN filters, or character-LSTM units per direction.", minimum=1, maximum=MAX_WIDTH
    )
    char_kernel: int = _key(3, "CNN window width, in characters.", minimum=1, maximum=MAX_WIDTH)
    max_word_chars: int = _key(
        64,
        "Characters of a word the character encoder reads: a longer word (a URL, a hashtag) is "
        "read as its first half and its last half of this many, so its prefix and suffix both "
        "count. The word embedding and the CRF still see the whole token.",
        minimum=2,
        maximum=MAX_WORD_CHARS_LIMIT,
    )
    casing_dim: int = _key(
        0,
        "Size of an embedding of each word's casing class (lower, upper, initial upper, "
        "numeric, ...); 0 = none. For lower-cased word vectors such as GloVe's.",
        maximum=MAX_WIDTH,
    )
    hidden_size: int = _key(
        200,
        "Word BiLSTM units per direction; 0: no BiLSTM, the tag scores straight from the word "
        "features (with `model.transformer`: a CRF on the encoder).",
        maximum=MAX_WIDTH,
    )
    num_layers: int = _key(1, "Word BiLSTM layers.", minimum=1, maximum=MAX_LAYERS)
    dropout: float = _key(
        0.5,
        "Dropout on the embeddings and the BiLSTM output.",
        probability=True,
        maximum=MAX_DROPOUT,
    )
    locked_dropout: bool = _key(
        False,
        "One dropout mask per sentence, shared by its words (variational dropout, flair's "
        "`LockedDropout`), instead of a fresh mask for every word. Not for `features`.",
    )
    document_context: bool = _key(
        False,
        "Each token also sees the mean of the BiLSTM states of every occurrence of its word in "
        "its document; batches hold whole documents (docs/document-context.md).",
    )
    hidden_layer: int = _key(
        0,
        "Units of a tanh layer between the BiLSTM output and the tag scores (Lample et al.'s "
        "code); 0 = none. Not for `features`.",
        maximum=MAX_WIDTH,
    )
    constrained: bool = _key(True, "Forbid the transitions the span scheme never makes.")
    embeddings: str | list[str] | None = _key(
        None, "Pretrained vectors in any common format; a list: side by side (docs/your-data.md)."
    )
    freeze_embeddings: bool = _key(False, "Keep the word embeddings fixed during training.")
    lexicons: dict[str, str] | None = _key(None, "`{TYPE: file}` dictionaries (docs/your-data.md).")
    char_lm: str | None = _key(
        None,
        "Experimental, no gain at 10 MB on 2 cores (test F1 83.55 vs 83.50 BC5CDR, 73.83 vs "
        "73.83 BTC, 90.13 vs 90.96 CoNLL-2003; docs/your-data.md): a `crftag pretrain` directory.",
    )
    char_lm_finetune: bool = _key(False, "Train `char_lm`'s models too (default: kept as is).")
    transformer: str | None = _key(
        None,
        "A Hugging Face encoder's folder (beside the config file), else a model name in the "
        "local cache (never downloaded): its word representations join the features "
        "(docs/transformer.md).",
    )
    transformer_layers: int = _key(
        1, "1: its last layer; N: a learned mix of its last N.", minimum=1, maximum=MAX_ENCODER
    )
    transformer_pooling: str = _key(
        "first", "A word's first subword, or their mean.", choices=POOLINGS
    )
    transformer_finetune: bool = _key(False, "Train the encoder too (default: frozen, cached).")
    transformer_lr_scale: float = _key(0.01, "Fine-tuned: its rate over `train.lr`.", maximum=100)
    transformer_max_length: int | None = _key(
        None, "Subwords a window holds; null: the encoder's own.", minimum=4, maximum=1 << 20
    )


@dataclass(frozen=True)
class TrainConfig:
    """The optimizer, its schedule, and when training stops."""

    optimizer: str = _key(
        "sgd",
        "`sgd` (with momentum) or `adam`; `encoder: features` takes plain SGD (`momentum: 0`, "
        "`clip_grad_norm: null`), on sparse gradients.",
        choices=("sgd", "adam"),
    )
    lr: float = _key(0.015, "Initial learning rate.", maximum=10)
    momentum: float = _key(0.9, "SGD momentum.", maximum=0.999)
    lr_decay: float = _key(
        0.05,
        "SGD: epoch e (from 1) runs at lr / (1 + lr_decay * (e - 1)); Ma & Hovy 2016.",
        maximum=100,
    )
    weight_decay: float = _key(
        0.0, "L2 penalty; `features` applies it exactly every step.", maximum=100
    )
    embedding_lr_scale: float = _key(
        1.0,
        "The word embeddings' learning rate as a multiple of `train.lr`: 1 fine-tunes them, "
        "0 keeps them as loaded. `bilstm` only; not with `model.freeze_embeddings`.",
        maximum=100,
    )
    clip_grad_norm: float | None = _key(
        5.0, "Gradient-norm clipping; null turns it off.", maximum=1_000_000
    )
    batch_size: int = _key(
        10, "Sentences per minibatch (of similar lengths).", minimum=1, maximum=MAX_BATCH
    )
    epochs: int = _key(50, "At most this many epochs.", minimum=1, maximum=MAX_EPOCHS)
    patience: int = _key(
        5,
        "Stop after this many epochs without a better dev score; 0 = never.",
        maximum=MAX_EPOCHS,
    )
    seed: int = _key(
        1,
        "Seeds Python and torch; a CPU run is reproducible with one seed.",
        maximum=MAX_SEED,
    )
    loss_reduction: str = _key(
        "sum", "The CRF's NLL summed over the batch or averaged.", choices=("sum", "mean")
    )
    word_dropout: float = _key(
        0.0,
        "Probability of replacing a word seen once in training by the unknown word (Lample et "
        "al. 2016).",
        probability=True,
        maximum=1,
    )
    average_from: int = _key(
        0,
        "Weight averaging (Izmailov et al. 2018): from this epoch on, dev scoring, early "
        "stopping and the saved model use the mean of the weights at each epoch's end since "
        "(training goes on from the raw weights); 0 = off.",
        maximum=MAX_EPOCHS,
    )
    amp: bool = _key(False, "bfloat16 autocast for the encoder (GPUs); the CRF stays float32.")
    sort_documents: bool = _key(
        False, "Batch `document_context` articles by longest sentence: less padding (docs/gpu.md)."
    )
    fast_encoder: bool = _key(
        True,
        "On a CPU, train the BiLSTMs through a hand-written backward pass and the character "
        "LSTM once per distinct word: about twice as fast, the same functions and random draws "
        "up to float rounding; false trains through torch's modules (docs/training-speed.md).",
    )
    unlabeled_as: str = _key(
        "O",
        "How training reads a token outside every span of a span file (jsonl, brat): `O`, or "
        "`unknown`, constraining nothing (docs/partial-labels.md); column files write `-`, `?`.",
        choices=("O", "unknown"),
    )
    init_from: str | None = _key(None, "A trained model to start from (docs/adaptation.md).")
    rehearsal: str | None = _key(None, "Old labelled data to train on beside (docs/adaptation.md).")
    label_map: dict[str, str] | None = _key(
        None,
        "With `init_from`: `{new: old}` label types, e.g. `{person: PER}`; each new label's "
        "output weights and transitions start from the old label's (B/I/E/S alike).",
    )
    drop_old_labels: bool = _key(
        False,
        "With `init_from`: leave out of the output the model's labels that the training data "
        "lacks, so they are no longer predicted.",
    )


@dataclass(frozen=True)
class Config:
    data: DataConfig
    vocab: VocabConfig = field(default_factory=VocabConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    tune: TuneConfig = field(default_factory=TuneConfig)  # crftag tune's search space
    augment: AugmentConfig = field(default_factory=AugmentConfig)  # text as people type it
    distill: DistillConfig = field(default_factory=DistillConfig)  # crftag distill's teacher term

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, source: str = "<config>") -> Config:
        """Build and validate a config from a plain dict (paths taken as they are); raises
        CrftagError naming every mistake, one a line; removed keys left off are dropped."""
        raw, errors = drop_removed_defaults(raw, source) if isinstance(raw, dict) else (raw, [])
        return build(cls, raw, source, errors)


_PATH_KEYS = {"data": ("train", "dev", "test"), "model": ("embeddings", "lexicons", "char_lm")}
_PATH_KEYS["train"] = ("init_from", "rehearsal")  # a bundled model's name: see init_from.py


def load_config(
    path: str, overrides: list[str] | tuple[str, ...] = (), *, defaults: dict | None = None
) -> Config:
    """``path`` read, ``--set`` overrides applied, validated (CrftagError: every mistake, one a
    line); ``defaults`` ``{section: {key: value}}`` for the keys neither sets."""
    return read_config(path, overrides).build(defaults)


@dataclass(frozen=True)
class ConfigSource:
    """A config file read once, overrides applied, mistakes kept: built again (with a base
    model's defaults) without reading."""

    path: str
    raw: dict
    errors: tuple[str, ...]

    def build(self, defaults: dict | None = None) -> Config:
        """The config, validated; ``defaults`` as for :func:`load_config`."""
        raw = dict(self.raw)  # each section given a default is a new dict; the reading stays
        for section, values in (defaults or {}).items():
            given = raw.get(section)
            raw[section] = {**values, **given} if isinstance(given, dict) else given or values
        return build(Config, raw, self.path, list(self.errors))


def _transformer_folder(base: str, model: dict) -> tuple[dict, str | None]:
    """The model section with ``transformer``, a relative path, made the folder beside the
    config file if one is there; else it is a name in the local Hugging Face cache. The
    working directory is never searched: a folder of that name there and not beside the file
    is a mistake (returned, with the section as written), and so is a name in neither place."""
    name = model.get("transformer")
    if not isinstance(name, str) or not name or os.path.isabs(name):
        return model, None
    beside = relative_to(base, name)
    if os.path.isdir(beside):
        return {**model, "transformer": beside}, None
    here = os.path.abspath(name)
    if os.path.isdir(here):
        return model, (
            f"model.transformer: {name}: no folder {beside} beside the config file, whose "
            f"paths are relative to it; {here} in the working directory is not read: give "
            "the path from the config file's folder, or an absolute one"
        )
    cache = hub_cache()
    if cache is not None and cached_snapshot(cache, name) is None:
        return model, (
            f"model.transformer: {name}: no folder {beside} beside the config file and no "
            f"{name!r} in the Hugging Face cache {cache}; crftag never downloads"
        )
    return model, None


def read_config(path: str, overrides: list[str] | tuple[str, ...] = ()) -> ConfigSource:
    """``path`` read (its paths made relative to its folder) and ``overrides`` applied."""
    raw, errors = read_yaml_file(path)
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise CrftagError(f"{path}: expected a mapping of sections (data, vocab, model, train)")
    base = os.path.dirname(os.path.abspath(path))
    for section, keys in _PATH_KEYS.items():
        values = raw.get(section)
        if isinstance(values, dict):
            raw[section] = {
                key: relative_to(base, value) if key in keys else value
                for key, value in values.items()
            }
    encoder, encoder_problem = None, None
    if isinstance(raw.get("model"), dict):
        raw["model"], encoder_problem = _transformer_folder(base, raw["model"])
        encoder = raw["model"].get("transformer")
    for override in overrides:
        problem = apply_override(raw, override)
        if problem is not None:
            errors.append(f"--set {override[:SHOWN_CHARS]}: {problem}")
    model = raw.get("model")
    if encoder_problem and isinstance(model, dict) and model.get("transformer") is encoder:
        errors.append(f"{path}: {encoder_problem}")  # unless --set gave another encoder
    raw, removed = removed_key_errors(raw, path)
    return ConfigSource(path, raw, (*errors, *removed))
