"""The ``data`` and ``vocab`` sections of a config: which labelled files are read and how,
and which words the vocabulary holds."""

from __future__ import annotations

from dataclasses import dataclass

from crftag.config.keys import (
    MAX_COLUMN,
    MAX_COUNT,
    MAX_WORDS,
    REQUIRED,
    SPAN_SCHEMES,
    TRAIN_SCHEMES,
    _key,
)
from crftag.data.align import MISALIGNED_POLICIES
from crftag.data.conll import ColumnSpec, Sentence, detect_format
from crftag.data.labelled import ANNOTATION_FORMATS, COLUMN_FORMATS, read_labelled
from crftag.data.partial import refuse_unknown


@dataclass(frozen=True)
class DataConfig:
    """The labelled files and how to read them."""

    train: str | list[str] = _key(
        REQUIRED,
        "Training file, or a list of files read one after the other (train and dev together, "
        "with `dev: null`, train a final model for `train.epochs` and keep the last epoch).",
    )
    dev: str | None = _key(None, "Development file: model selection and early stopping.")
    test: str | None = _key(None, "Test file, scored once with the best model at the end.")
    format: str = _key(
        "auto",
        "`auto`: brat for a folder, span JSONL for `.jsonl`/`.json` files (or a first character "
        "`{` or `[`), CoNLL-U for `.conllu` files and files of 10 tab-separated columns, else "
        'CoNLL. `jsonl` reads one document per line, `{"text", "spans": [{"start", '
        '"end", "label"}]}` and the doccano, Prodigy and Label Studio variants '
        "(docs/annotations.md).",
        choices=("auto", *COLUMN_FORMATS, *ANNOTATION_FORMATS),
    )
    word_column: int | None = _key(
        None,
        "0-based word column; null: the first column (CoNLL), FORM (CoNLL-U).",
        minimum=-MAX_COLUMN,
        maximum=MAX_COLUMN,
    )
    tag_column: int | None = _key(
        None,
        "0-based tag column, negative from the end; null: the last column (CoNLL), UPOS.",
        minimum=-MAX_COLUMN,
        maximum=MAX_COLUMN,
    )
    tag_scheme: str = _key(
        "auto",
        "Scheme of the files' tags, detected from the training file by `auto`; `none`: tags "
        "that are not spans (part of speech), scored by token accuracy.",
        choices=("auto", *SPAN_SCHEMES, "none"),
    )
    train_scheme: str = _key(
        "bioes", "Scheme the model is trained in; output is always IOB2.", choices=TRAIN_SCHEMES
    )
    misaligned: str = _key(
        "error",
        "A span of `jsonl` or `brat` data that does not start and end on token boundaries: "
        "`error` stops naming it, `warn` leaves it out, `expand` stretches it to the tokens it "
        "touches; both of those report each span and the count.",
        choices=MISALIGNED_POLICIES,
    )

    def column_spec(self, path: str) -> ColumnSpec:
        """How to read ``path`` under these column settings (``format: auto`` looks at it)."""
        file_format = self.format if self.format in COLUMN_FORMATS else detect_format(path)
        return ColumnSpec.for_format(file_format, self.word_column, self.tag_column)

    def read(self, path: str, *, unknown_tags: bool = False) -> list[Sentence]:
        """The labelled sentences of ``path`` read under these settings; a tag ``-`` or ``?``
        (unknown) is an error unless ``unknown_tags`` (training files: docs/partial-labels.md)."""
        found = read_labelled(path, self.format, self.word_column, self.tag_column, self.misaligned)
        return found if unknown_tags else refuse_unknown(found, path)


@dataclass(frozen=True)
class VocabConfig:
    """How words are looked up, and which words the vocabulary holds."""

    min_freq: int = _key(
        1, "Training words seen fewer times than this are unknown.", maximum=MAX_COUNT
    )
    lowercase: bool = _key(False, "Look words up lower-cased.")
    normalize_digits: bool = _key(True, "Look words up with every digit replaced by 0.")
    max_size: int = _key(
        2_000_000,
        "A larger vocabulary is an error, reported before allocation.",
        minimum=1,
        maximum=MAX_WORDS,
    )
    embedding_words: int = _key(
        0,
        "Add up to this many words of `model.embeddings` (file order: most frequent first for "
        "GloVe) beyond the training words, so unseen test words keep their vectors.",
        maximum=MAX_WORDS,
    )
