"""``crftag select`` on files: units read and tagged the way ``predict`` streams them, the best
kept (:class:`crftag.inference.selection.Selection`), and written as span JSONL records that
annotation tools import with the model's spans as pre-annotations.

A record holds ``id`` (:func:`unit_key`), ``text``, ``label`` (the predicted spans as
``[start, end, label]`` character offsets into ``text``, doccano's JSONL), ``tokens`` (for
sentence input, so that reading it back gives the tokens tagged), ``meta`` (source, strategy,
score, rank, the spans' confidences) and, for Label Studio, ``data`` and ``predictions`` (the
spans as ``labels`` results with their confidences as scores).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crftag.data.align import document_tokens
from crftag.data.annotations import read_annotations
from crftag.data.atomic import atomic_output
from crftag.data.conll import detect_format, source_name
from crftag.data.jsonl import LINE_BREAKS, json_line
from crftag.data.labelled import COLUMN_FORMATS, detect_annotation_format
from crftag.data.progress import progress_bar
from crftag.data.tokenize import tokenize
from crftag.errors import CrftagError
from crftag.inference.documents import read_documents, tag_document_sentences
from crftag.inference.selection import (
    Candidate,
    Selection,
    prediction_options,
    unit_key,
    unit_score,
)
from crftag.inference.streaming import batches_of, read_sentences

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase
    from crftag.inference.records import Prediction

__all__ = ["SelectOptions", "excluded_ids", "select_files", "selection_record", "write_selection"]

# The Label Studio labelling config the records' predictions name: <Text name="text"
# value="$text"/> and <Labels name="label" toName="text">.
LABEL_STUDIO_FROM, LABEL_STUDIO_TO = "label", "text"


@dataclass(frozen=True)
class SelectOptions:
    """What ``crftag select`` is asked for."""

    strategy: str
    count: int
    input_format: str = "text"
    normalize: bool = True
    diverse: bool = False
    seed: int = 0
    batch_size: int = 64
    show_progress: bool = False


@dataclass
class Unit:
    """A sentence or document as tagged: where it is, its text and tokens, its sentences'
    predictions (offsets into ``text``)."""

    source: str
    text: str
    tokens: list[str]
    parts: list[Prediction]
    whole_document: bool


def select_files(
    tagger: TaggerBase,
    paths: Iterable[str],
    options: SelectOptions,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[Candidate], int]:
    """The chosen units of ``paths``, best first, and the number of units considered (those
    with tokens, not excluded)."""
    selection = Selection(options.count, options.diverse)
    predict_options = prediction_options(options.strategy)
    if options.input_format == "doc":
        units = _document_units(tagger, paths, options.batch_size, predict_options)
    else:
        units = _sentence_units(tagger, paths, options, predict_options)
    considered = 0
    bar = progress_bar(
        units,
        show=options.show_progress,
        desc="select",
        unit=" documents" if options.input_format == "doc" else " sentences",
        leave=False,
    )
    for order, unit in enumerate(bar):
        key = unit_key(unit.tokens)
        if not unit.tokens or key in exclude:
            continue
        considered += 1
        score = unit_score(
            options.strategy, unit.parts, normalize=options.normalize, key=key, seed=options.seed
        )
        selection.offer(_candidate(unit, score, order, key))
    return selection.chosen(), considered


def _candidate(unit: Unit, score: float, order: int, key: str) -> Candidate:
    probability = 1.0
    for part in unit.parts:
        probability *= part.probability
    spans = [
        {name: span[name] for name in ("start_char", "end_char", "label", "text", "confidence")}
        for part in unit.parts
        for span in part.spans
    ]
    return Candidate(
        score=score,
        order=order,
        id=key,
        text=unit.text,
        tokens=unit.tokens,
        spans=spans,
        probability=probability,
        source=unit.source,
        whole_document=unit.whole_document,
    )


def _sentence_units(
    tagger: TaggerBase, paths: Iterable[str], options: SelectOptions, predict_options: dict
) -> Iterator[Unit]:
    """Each sentence of text, tokens or column input, tagged a batch at a time as ``predict``
    tags it (document context over column input's documents)."""
    column_input = options.input_format in COLUMN_FORMATS
    whole_documents = tagger.document_context and column_input
    word_column = tagger.config.data.word_column
    for path in paths:
        records = read_sentences(path, options.input_format, word_column)
        records = (record for record in records if not record.markup)
        for batch in batches_of(records, options.batch_size, whole_documents=whole_documents):
            token_lists = [list(record.sentence.tokens) for record in batch]
            predictions = tagger.predict(
                token_lists,
                batch_size=options.batch_size,
                documents=[record.document for record in batch],
                texts=[record.text for record in batch],
                **predict_options,
            )
            for record, prediction in zip(batch, predictions, strict=True):
                tokens = list(record.sentence.tokens)
                text = record.text if record.text is not None else " ".join(tokens)
                where = f"{source_name(path)}:{record.sentence.line}"
                yield Unit(where, text, tokens, [prediction], whole_document=False)


def _document_units(
    tagger: TaggerBase, paths: Iterable[str], batch_size: int, predict_options: dict
) -> Iterator[Unit]:
    """Each whole document (``--input-format doc``), its sentences tagged together."""
    documents = (document for path in paths for document in read_documents(path))
    tagged = tag_document_sentences(tagger, documents, batch_size=batch_size, **predict_options)
    for document, _, parts in tagged:
        tokens = [token for part in parts for token in part.tokens]
        yield Unit(document.where(), document.text, tokens, parts, whole_document=True)


def excluded_ids(paths: Iterable[str]) -> set[str]:
    """The ids of every sentence and document of already annotated files: span JSONL (what
    ``select`` writes, doccano's export), a Label Studio JSON export, a brat folder, or a
    CoNLL or CoNLL-U file."""
    ids: set[str] = set()
    for path in paths:
        if detect_annotation_format(path) is None:
            records = read_sentences(path, detect_format(path), None)
            ids.update(unit_key(record.sentence.tokens) for record in records)
            continue
        for document in read_annotations(path):
            sentences = document_tokens(document)
            ids.add(unit_key(document.tokens or tokenize(document.text)))
            ids.add(unit_key([document.text[a:b] for offsets in sentences for a, b in offsets]))
            ids.update(unit_key([document.text[a:b] for a, b in s]) for s in sentences)
    return ids


def selection_record(candidate: Candidate, rank: int, strategy: str) -> dict:
    """The record of one chosen unit (the module's docstring lists its keys)."""
    record = {
        "id": candidate.id,
        "text": candidate.text,
        "label": [[s["start_char"], s["end_char"], s["label"]] for s in candidate.spans],
    }
    if not candidate.whole_document:
        record["tokens"] = candidate.tokens
    record["meta"] = {
        "source": candidate.source,
        "strategy": strategy,
        "score": candidate.score,
        "rank": rank,
        "probability": candidate.probability,
        "confidence": [span["confidence"] for span in candidate.spans],
    }
    record["data"] = {"text": candidate.text}
    record["predictions"] = [
        {
            "model_version": "crftag",
            "score": candidate.probability,
            "result": [_label_studio_result(span) for span in candidate.spans],
        }
    ]
    return record


def _label_studio_result(span: dict) -> dict:
    return {
        "from_name": LABEL_STUDIO_FROM,
        "to_name": LABEL_STUDIO_TO,
        "type": "labels",
        "value": {
            "start": span["start_char"],
            "end": span["end_char"],
            "text": span["text"],
            "labels": [span["label"]],
        },
        "score": span["confidence"],
    }


def write_selection(path: str, records: list[dict]) -> None:
    """Write the records to ``path`` whole or not at all: JSON lines, or one JSON array (the
    form every Label Studio version imports) for a ``.json`` path; ``-`` is stdout."""
    if path.endswith(".json"):
        text = json.dumps(records, ensure_ascii=False, indent=1).translate(LINE_BREAKS) + "\n"
    else:
        text = "".join(json_line(record) for record in records)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with atomic_output(path) as stream:
            stream.write(text)
    except OSError as error:
        raise CrftagError(f"{path}: cannot write there: {error.strerror}") from None
