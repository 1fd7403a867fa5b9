"""What a model trains on: the training files read, their tag scheme resolved, the vocabularies
built, and every sentence encoded once.

Data flows one way here: files -> sentences (in the scheme the model trains in) -> vocabularies
-> index tensors. Reading a dev or test file is :meth:`crftag.config.sections.DataConfig.read`.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass

import torch

from crftag.config.sections import Config
from crftag.data.batching import Encoded, encode
from crftag.data.conll import Sentence, document_keys, open_binary, read_columns
from crftag.data.labelled import ANNOTATION_FORMATS, COLUMN_FORMATS, detect_labelled_format
from crftag.data.partial import UNKNOWN, has_unknown, in_scheme, known, permitted_tags
from crftag.data.schemes import detect_scheme, is_span_tagset
from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.errors import CrftagError
from crftag.features.registry import read_resources

__all__ = [
    "TrainingSet",
    "build_vocabularies",
    "encode_training_set",
    "read_training_files",
    "resolve_schemes",
    "training_files",
]


@dataclass
class TrainingSet:
    """The training sentences ready for batching.

    sentences  tags rewritten in the scheme the model trains in
    documents  one key per sentence, equal for the sentences of one document of one file
    encoded    each sentence's index tensors, in the order of ``sentences``
    """

    sentences: list[Sentence]
    documents: list[Hashable]
    encoded: list[Encoded]
    vocabularies: Vocabularies
    data_scheme: str  # the files' tag scheme, "none" for tags that are not spans
    train_scheme: str  # the scheme the model predicts in

    @property
    def lengths(self) -> list[int]:
        return [len(sentence.tokens) for sentence in self.sentences]

    @property
    def words(self) -> torch.Tensor:
        """(N,) long: every word index of the training data, in order."""
        return torch.cat([item.words for item in self.encoded])


def training_files(config: Config) -> list[str]:
    """``data.train`` as a list: one file, or several read one after the other."""
    train = config.data.train
    return list(train) if isinstance(train, list) else [train]


def read_training_files(config: Config) -> list[tuple[str, list[Sentence]]]:
    """(path, its sentences) for each training file, in order; with ``train.unlabeled_as:
    unknown`` the ``O`` tags of span files (jsonl, brat) are unknown (``?``)."""
    files = [(path, config.data.read(path, unknown_tags=True)) for path in training_files(config)]
    if config.train.unlabeled_as == "O":
        return files
    return [(path, _unlabeled_unknown(path, config, sentences)) for path, sentences in files]


def _unlabeled_unknown(path: str, config: Config, sentences: list[Sentence]) -> list[Sentence]:
    declared = config.data.format
    if (detect_labelled_format(path) if declared == "auto" else declared) not in ANNOTATION_FORMATS:
        return sentences
    return [
        dataclasses.replace(s, tags=tuple(UNKNOWN if t == "O" else t for t in s.tags))
        for s in sentences
    ]


def resolve_schemes(config: Config, files: list[tuple[str, list[Sentence]]]) -> tuple[str, str]:
    """(the files' tag scheme, the scheme the model trains in)."""
    _check_some_tag_known(files)
    declared = config.data.tag_scheme
    # Unknown tags (docs/partial-labels.md) say nothing about the scheme.
    sentences = [s for _, file_sentences in files for s in file_sentences]
    data_scheme = (
        detect_scheme(known(s.tags) for s in sentences) if declared == "auto" else declared
    )
    if data_scheme != "none" and not is_span_tagset(t for s in sentences for t in known(s.tags)):
        path, bad = next(
            (path, t)
            for path, file_sentences in files
            for s in file_sentences
            for t in s.tags
            if t != "O" and "-" not in t
        )
        raise CrftagError(
            f"{_where_is(config, path, bad)}: tag {bad!r} is not a span tag (B-X, I-X, E-X, "
            "S-X or O) but "
            f"data.tag_scheme is {declared}; set data.tag_scheme: none for tags such as part of "
            "speech"
        )
    train_scheme = "none" if data_scheme == "none" else config.data.train_scheme
    return data_scheme, train_scheme


def _check_some_tag_known(files: list[tuple[str, list[Sentence]]]) -> None:
    """Some token has a known tag: where every tag is unknown (``-`` or ``?``), every tag
    sequence fits the data equally well, so there is nothing to learn from."""
    if any(known(s.tags) for _, file_sentences in files for s in file_sentences):
        return
    raise CrftagError(
        f"{', '.join(path for path, _ in files)}: every tag is unknown (- or ?), so there is "
        "nothing to learn from; give some tokens their tags (docs/partial-labels.md)"
    )


def _where_is(config: Config, path: str, tag: str) -> str:
    """``path:line`` of ``tag``'s first occurrence (the file read again, keeping the lines: only
    an error message needs it); ``path`` alone for sentences that came from no file."""
    if not os.path.isfile(path) or detect_labelled_format(path) not in COLUMN_FORMATS:
        return path  # a record's tags: the record is named by the check that read it
    with open_binary(path) as stream:
        spec = config.data.column_spec(path)
        for sentence in read_columns(stream, path, spec, keep_raw=True):
            if tag in sentence.tags:
                return f"{path}:{sentence.line + sentence.token_rows[sentence.tags.index(tag)]}"
    raise AssertionError(f"{tag!r} not found again in {path}")


def build_vocabularies(
    config: Config, sentences: list[Sentence], train_scheme: str
) -> Vocabularies:
    """Words (by their look-up form), characters and tags of the training sentences, and what
    each of the model's features keeps in the vocabularies, read from the files the config
    names (``Feature.read_resource``: a model's dictionaries, ...)."""
    words: Counter[str] = Counter()
    chars: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    vocabularies = Vocabularies(
        words=Vocabulary([]),
        chars=Vocabulary([]),
        tags=Vocabulary([], has_unknown=False),
        lowercase=config.vocab.lowercase,
        normalize_digits=config.vocab.normalize_digits,
        feature_buckets=config.model.feature_buckets if config.model.encoder == "features" else 0,
        max_word_chars=config.model.max_word_chars,
        resources=read_resources(config),
    )
    for sentence in sentences:
        words.update(vocabularies.word_key(token) for token in sentence.tokens)
        for token in sentence.tokens:
            chars.update(token)
        tags.update(known(sentence.tags))
    vocabularies.words = Vocabulary.build(words, min_freq=config.vocab.min_freq)
    if len(vocabularies.words) > config.vocab.max_size:
        raise CrftagError(
            f"{', '.join(training_files(config))}: the training vocabulary has "
            f"{len(vocabularies.words)} words, "
            f"more than vocab.max_size={config.vocab.max_size}; raise vocab.max_size or "
            "vocab.min_freq"
        )
    vocabularies.chars = Vocabulary.build(chars)
    vocabularies.tags = Vocabulary(sorted(tags), has_unknown=False)
    return vocabularies


def in_train_scheme(sentences: list[Sentence], train_scheme: str) -> list[Sentence]:
    """The sentences with their tags rewritten in the scheme the model trains in (unknown tags:
    :func:`crftag.data.partial.in_scheme`)."""
    if train_scheme == "none" and not any(has_unknown(s.tags) for s in sentences):
        return sentences
    return [Sentence(s.tokens, tuple(in_scheme(s.tags, train_scheme)), s.line) for s in sentences]


def encode_training_set(
    files: list[tuple[str, list[Sentence]]],
    vocabularies: Vocabularies,
    data_scheme: str,
    train_scheme: str,
) -> TrainingSet:
    """The :class:`TrainingSet` of ``files`` (as read, tags in ``data_scheme``). The tags that
    only unknown tags' neighbours may take (:func:`crftag.data.partial.permitted_tags`) join
    the tag vocabulary."""
    read = [s for _, in_file in files for s in in_file]
    sentences = in_train_scheme(read, train_scheme)
    # (file, document) of each sentence: document context pools over one document of one file.
    documents = [
        key for number, (_, in_file) in enumerate(files) for key in document_keys(in_file, number)
    ]
    permitted = [permitted_tags(s.tags, data_scheme, train_scheme) for s in read]
    vocabularies.tags.extend(
        sorted({tag for sets in permitted for forms in sets or () for tag in forms or ()})
    )
    encoded = [
        encode(s.tokens, vocabularies, s.tags, sets)
        for s, sets in zip(sentences, permitted, strict=True)
    ]
    return TrainingSet(sentences, documents, encoded, vocabularies, data_scheme, train_scheme)
