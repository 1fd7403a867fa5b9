"""Whole documents in, one record out per document.

A document is a record of a JSON lines stream (``{"text": ...}``, or any span JSONL variant that
``crftag train`` reads, its spans ignored), a Label Studio export, a brat folder's ``.txt`` files,
or a whole plain-text file. Its text is split into sentences and tokens
(:func:`crftag.data.align.document_tokens`), the sentences are tagged together (so a model with
document context sees the whole document), and their predictions are joined into one record
whose offsets point into the document's text.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO, TextIO

from crftag.data.align import document_tokens
from crftag.data.annotations import (
    CharSpan,
    Document,
    format_span_jsonl,
    read_annotations,
    read_document_text,
    read_label_studio,
    read_span_jsonl,
)
from crftag.data.conll import open_binary
from crftag.data.jsonl import json_line
from crftag.data.labelled import detect_annotation_format
from crftag.errors import CrftagError
from crftag.inference.records import Prediction, join_pieces

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = ["predict_documents", "read_documents", "tag_document_sentences", "tag_documents"]


def read_documents(path: str) -> Iterator[Document]:
    """The documents of one input, lazily (``-`` is stdin): JSON lines or Label Studio JSON when
    the input starts with ``{`` or ``[`` (or is named ``.jsonl``/``.json``), a brat folder's
    documents, or else the whole input as one plain-text document. A JSON lines record or a
    plain-text document holds at most ``MAX_DOCUMENT_BYTES``
    (:mod:`crftag.data.annotations`)."""
    if path == "-":
        yield from _read_stdin()
        return
    if detect_annotation_format(path) is not None:
        yield from read_annotations(path)
        return
    with open_binary(path) as stream:
        yield _plain_text(stream, path)


def _read_stdin() -> Iterator[Document]:
    stream = sys.stdin.buffer
    if not hasattr(stream, "peek"):
        stream = io.BufferedReader(stream)
    head = stream.peek(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head == b"{":
        yield from read_span_jsonl(stream, "<stdin>")
    elif head == b"[":
        yield from read_label_studio(stream, "<stdin>")
    else:
        yield _plain_text(stream, "<stdin>")


def _plain_text(stream: BinaryIO, source: str) -> Document:
    text = read_document_text(stream, source)
    return Document(text=text.removeprefix("\ufeff"), spans=(), source=source, line=1)


def tag_documents(
    tagger: TaggerBase,
    documents: Iterable[Document],
    *,
    batch_size: int = 64,
    **options,
) -> Iterator[tuple[Document, Prediction]]:
    """(document, its prediction) for each document, in order; ``options`` are those of
    :meth:`Tagger.predict` (``probs``, ``nbest``, ``min_confidence``, ``token_offsets``).
    Documents are tagged a group at a time, a group holding at least ``batch_size`` sentences
    (or the last documents), so memory stays bounded by the largest document."""
    tagged = tag_document_sentences(tagger, documents, batch_size=batch_size, **options)
    for document, sentences, parts in tagged:
        joined = join_pieces(parts) if parts else _empty(options)
        joined.sentences = _sentence_records(sentences)
        yield document, joined


def tag_document_sentences(
    tagger: TaggerBase,
    documents: Iterable[Document],
    *,
    batch_size: int = 64,
    **options,
) -> Iterator[tuple[Document, list[list[tuple[int, int]]], list[Prediction]]]:
    """(document, each sentence's token offsets, each sentence's prediction) for each document,
    in order, as :func:`tag_documents` tags them; the predictions' character offsets point into
    the document's text, and each keeps its own n best."""
    group: list[tuple[Document, list[list[tuple[int, int]]]]] = []
    sentences = 0
    try:
        for document in documents:
            offsets = document_tokens(document)
            group.append((document, offsets))
            sentences += len(offsets)
            if sentences >= batch_size:
                yield from _tag_group(tagger, group, batch_size, options)
                group, sentences = [], 0
    except CrftagError:
        # A bad document ends the stream, after the documents read before it are written.
        yield from _tag_group(tagger, group, batch_size, options)
        raise
    yield from _tag_group(tagger, group, batch_size, options)


def _tag_group(tagger, group, batch_size, options) -> Iterator[tuple]:
    if not group:
        return
    token_lists, texts, keys, starts = [], [], [], []
    for number, (document, sentences) in enumerate(group):
        for offsets in sentences:
            start, end = offsets[0][0], offsets[-1][1]
            token_lists.append([document.text[a:b] for a, b in offsets])
            texts.append(document.text[start:end])
            keys.append(number)
            starts.append(start)
    predictions = tagger.predict(
        token_lists, batch_size=batch_size, documents=keys, texts=texts, **options
    )
    position = 0
    for document, sentences in group:
        parts = [
            _shifted(prediction, start)
            for prediction, start in zip(
                predictions[position : position + len(sentences)],
                starts[position : position + len(sentences)],
                strict=True,
            )
        ]
        position += len(sentences)
        yield document, sentences, parts


def _sentence_records(sentences: list[list[tuple[int, int]]]) -> list[dict]:
    """Each sentence's token range and character range in the document."""
    records, first = [], 0
    for offsets in sentences:
        records.append(
            {
                "start": first,
                "end": first + len(offsets),
                "start_char": offsets[0][0],
                "end_char": offsets[-1][1],
            }
        )
        first += len(offsets)
    return records


def _shifted(prediction: Prediction, start: int) -> Prediction:
    """The prediction of a sentence that starts at character ``start`` of its document, with
    character offsets into the document instead of the sentence."""
    for span in prediction.spans:
        span["start_char"] += start
        span["end_char"] += start
    if prediction.token_offsets is not None:
        prediction.token_offsets = [[a + start, b + start] for a, b in prediction.token_offsets]
    return prediction


def _empty(options: dict) -> Prediction:
    """The record of a document without a single token."""
    probs, nbest = options.get("probs"), options.get("nbest", 1)
    return Prediction(
        tokens=[],
        tags=[],
        token_probs=[] if probs else None,
        marginals=[] if probs == "all" else None,
        nbest=[{"tags": [], "score": 0.0, "probability": 1.0}] if nbest > 1 else None,
        token_offsets=[] if options.get("token_offsets") else None,
    )


def format_document(document: Document, prediction: Prediction, output_format: str) -> str:
    """One document's record: JSON lines (offsets into its text), span JSONL (its text and the
    predicted spans, for annotation tools to import) or CoNLL (a ``-DOCSTART-`` line, then one
    block per sentence)."""
    if output_format == "jsonl":
        return json_line(prediction.to_dict())
    if output_format == "spans":
        spans = tuple(
            CharSpan(s["start_char"], s["end_char"], s["label"]) for s in prediction.spans
        )
        return format_span_jsonl(
            Document(document.text, spans, tokens=document.tokens, extra=document.extra)
        )
    blocks = ["-DOCSTART-\tO\n\n"]
    for sentence in prediction.sentences or []:
        rows = range(sentence["start"], sentence["end"])
        blocks.append("".join(f"{prediction.tokens[i]}\t{prediction.tags[i]}\n" for i in rows))
        blocks.append("\n")
    return "".join(blocks)


def predict_documents(
    tagger: TaggerBase, paths: Iterable[str], output: TextIO, output_format: str, **options
) -> int:
    """Tag the documents of ``paths`` into ``output``; return the number of documents."""
    documents = (document for path in paths for document in read_documents(path))
    count = 0
    for document, prediction in tag_documents(tagger, documents, **options):
        output.write(format_document(document, prediction, output_format))
        output.flush()
        count += 1
    return count
