"""The config's vocabulary of values: the enumerations every layer shares, the bounds on the
numbers, and :func:`_key`, which declares one key with its default, description and checks."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from crftag.data.labelled import COLUMN_FORMATS

# The one list of each enumeration; the CLI's choices and the config's are built from these.
# The labelled file formats (column files, character spans over documents) are data/labelled.py's.
INPUT_FORMATS = ("text", "tokens", "doc", *COLUMN_FORMATS)  # what predict reads
OUTPUT_FORMATS = ("conll", "jsonl", "spans")  # what predict writes
SPAN_SCHEMES = ("iob1", "iob2", "bioes")  # tag schemes of entity spans; "none" is one tag a token
TRAIN_SCHEMES = ("bioes", "iob2")  # schemes a model can be trained in


REQUIRED: Any = dataclasses.MISSING  # the default of a key every config must set

# Bounds on the numbers: generous for any model crftag trains, small enough that no value asks
# for terabytes. The network's bound what a model file may hold too: its config is read through
# these sections before anything is built from it.
MAX_WIDTH = 4096  # any one width of the network: embedding, character, hidden sizes
MAX_LAYERS = 16
MAX_BUCKETS = 1 << 24
MAX_WORDS = 10_000_000  # vocabulary entries
MAX_WORD_CHARS_LIMIT = 1024  # characters of one word the character encoder may read
MAX_COUNT = 1_000_000_000  # word frequencies
MAX_COLUMN = 1000  # column indices, from either end
MAX_EPOCHS = 100_000  # also of the epoch counts patience and average_from
MAX_BATCH = 10_000
MAX_SEED = 2**32 - 1  # what numpy's and CUDA's generators take
MAX_ENCODER = 256  # a pretrained encoder's layers, its embeddings' output included
MAX_DROPOUT = 0.95  # beyond, each unit survives so rarely that training only sees noise


_WIDTH = {"minimum": 1, "maximum": MAX_WIDTH}  # the checks of a width of the network


def _key(default: Any, doc: str, **checks: Any) -> Any:
    """A config key: its default, its description (docs/config.md is generated from it by
    :mod:`crftag.config.reference`), and the checks :func:`load_config` applies: ``choices``,
    ``minimum`` (0 unless set), ``maximum`` (which every number has), ``probability=True``."""
    return field(default=default, metadata={"doc": doc, **checks})
