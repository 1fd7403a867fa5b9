"""Streaming prediction: sentences in (text, tokens, CoNLL or CoNLL-U), one record out per sentence,
in input order, a batch at a time, flushed after every batch so a pipeline sees progress. Whole
documents (``doc``) go to :mod:`crftag.inference.documents`, one record out per document."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from crftag.config.sections import INPUT_FORMATS, OUTPUT_FORMATS
from crftag.data.annotations import CharSpan, Document, format_span_jsonl
from crftag.data.conll import (
    ColumnSpec,
    Sentence,
    document_key,
    format_conll_block,
    open_binary,
    read_columns,
    read_lines,
    source_name,
)
from crftag.data.indices import MAX_DOCUMENT_SENTENCES
from crftag.data.jsonl import json_line
from crftag.data.labelled import COLUMN_FORMATS
from crftag.data.tokenize import tokenize
from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.inference.documents import predict_documents
from crftag.inference.records import Prediction
from crftag.inference.shards import ShardWriter

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = [
    "BatchSettings",
    "PredictOptions",
    "Record",
    "batches_of",
    "input_records",
    "predict_files",
    "read_sentences",
    "tag_batch",
    "tag_files",
]


@dataclass(frozen=True)
class Record:
    """One unit of input: a sentence, or (column input only) a block of markup lines with no word,
    such as ``-DOCSTART-``, that is written back in CoNLL output and is no record in JSON lines."""

    sentence: Sentence
    markup: bool = False
    document: Hashable = None  # equal for the sentences of one document (document context)
    text: str | None = None  # the line a text or tokens sentence was cut from (span offsets)


def read_sentences(
    path: str, input_format: str, word_column: int | None, on_error: str = "stop"
) -> Iterator[Record]:
    """Records of one input, lazily. ``text`` lines are tokenized, ``tokens`` lines split on
    whitespace; every line of those two is one sentence, an empty line an empty sentence, and
    with ``on_error="skip"`` an unreadable line too. A text line is a document of its own;
    column input has documents when it has ``-DOCSTART-`` or ``# newdoc`` markers. CoNLL input
    takes its word from ``word_column`` (None: the first), CoNLL-U always from FORM."""
    source = source_name(path)
    with open_binary(path) as stream:
        if input_format in ("text", "tokens"):
            split = tokenize if input_format == "text" else str.split
            for number, line in read_lines(stream, source, on_error, allow_nul=True):
                sentence = Sentence(tuple(split(line)) if line else (), None, number)
                # No markers in text: every line is a document of its own.
                document = document_key(sentence, source, number)
                yield Record(sentence, document=document, text=line)
            return
        # A CoNLL-U word is always FORM: the model's word column (trained on CoNLL files,
        # perhaps word-first) says nothing about CoNLL-U, whose column 0 is the ID.
        if input_format == "conllu":
            word_column = None
        spec = ColumnSpec.for_format(input_format, word_column)
        spec = ColumnSpec(spec.format, spec.word_column, tag_column=None)
        sentences = read_columns(
            stream, source, spec, keep_raw=True, keep_markup=True, on_error=on_error
        )
        for sentence in sentences:
            document = document_key(sentence, source, sentence.line)
            yield Record(sentence, markup=not sentence.tokens, document=document)


def input_records(
    paths: Iterable[str],
    input_format: str,
    word_column: int | None,
    on_error: str,
    output_format: str,
) -> Iterator[Record]:
    """The records of every input in turn, lazily; markup blocks only for CoNLL output (they
    write nothing in JSON, so are no records there)."""
    records = itertools.chain.from_iterable(
        read_sentences(path, input_format, word_column, on_error) for path in paths
    )
    if output_format != "conll":
        records = (record for record in records if not record.markup)
    return records


def batches_of(
    records: Iterable[Record], size: int, whole_documents: bool = False
) -> Iterator[list[Record]]:
    """Batches of records. An input error ends the stream, but only after the records read
    before it have been handed out, so everything before a bad line is still written.

    With ``whole_documents`` a full batch is only cut where a new document starts (or when a
    document runs past ``MAX_DOCUMENT_SENTENCES`` more), so a model with document context sees
    each document whole; a batch is then handed out when the next document's first record
    arrives.
    """
    batch: list[Record] = []
    try:
        for record in records:
            if (
                whole_documents
                and len(batch) >= size
                and not record.markup
                and (
                    record.document != _last_document(batch)
                    or len(batch) >= size + MAX_DOCUMENT_SENTENCES
                )
            ):
                yield batch
                batch = []
            batch.append(record)
            if not whole_documents and len(batch) == size:
                yield batch
                batch = []
    except CrftagError:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def _last_document(batch: list[Record]) -> Hashable:
    """The document of the batch's last sentence (markup records, such as -DOCSTART-, have
    none of their own: they open the next document)."""
    for record in reversed(batch):
        if not record.markup:
            return record.document
    return None


def format_record(
    record: Record, prediction: Prediction, output_format: str, column_input: bool
) -> str:
    if output_format in ("jsonl", "spans") and record.markup:
        return ""
    if output_format == "jsonl":
        return json_line(prediction.to_dict())
    if output_format == "spans":
        return format_span_jsonl(_as_document(record, prediction))
    if column_input:
        return format_conll_block(record.sentence, prediction.tags)
    pairs = zip(prediction.tokens, prediction.tags, strict=True)
    return "".join([f"{token}\t{tag}\n" for token, tag in pairs]) + "\n"


def _as_document(record: Record, prediction: Prediction) -> Document:
    """A sentence and its predicted spans as a span JSONL document: the text line as given (for
    column input, the tokens joined by single spaces) and the tokens tagged, so that reading the
    record back gives the same tokens."""
    spans = tuple(CharSpan(s["start_char"], s["end_char"], s["label"]) for s in prediction.spans)
    tokens = record.sentence.tokens
    text = record.text if record.text is not None else " ".join(tokens)
    return Document(text, spans, tokens=tokens)


def predict_files(
    tagger: TaggerBase,
    paths: Iterable[str],
    *,
    input_format: str,
    output_format: str,
    batch_size: int,
    output: TextIO,
    probs: str | None = None,
    nbest: int = 1,
    min_confidence: float = 0.0,
    on_error: str = "stop",
    shard: tuple[int, int] = (0, 1),
    token_offsets: bool = False,
) -> int:
    """Tag every input and write the records to ``output``; return the number of sentences.

    ``shard`` (I, N) keeps only batches I, I + N, I + 2N, ... (0-based) of ``batch_size``
    records, so N processes tag a corpus together and :func:`crftag.inference.shards.merge_shards`
    restores the input order. Whole batches, not single records, are dealt out because the
    network's arithmetic depends (in the last bits) on which sentences share a batch: this way
    every sentence is computed exactly as an unsharded run computes it, and the merged output is
    the same bytes.

    JSON lines carry everything :meth:`Tagger.predict` computes (span confidence, sequence
    probability, character offsets into each text line, and marginals, n-best or token offsets
    on request); CoNLL output needs only the Viterbi tags, and takes the fast path unless spans
    are filtered by confidence.
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"expected input_format in {INPUT_FORMATS}, got {input_format!r}")
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"expected output_format in {OUTPUT_FORMATS}, got {output_format!r}")
    if input_format == "doc":
        if shard[1] > 1:
            raise CrftagError(
                "--shard: document input is tagged a whole document at a time; tag it in one "
                "process"
            )
        options = dict(probs=probs, nbest=nbest, min_confidence=min_confidence)
        return predict_documents(
            tagger,
            paths,
            output,
            output_format,
            batch_size=batch_size,
            token_offsets=token_offsets,
            **options,
        )
    column_input = input_format in COLUMN_FORMATS
    word_column = tagger.config.data.word_column
    records = input_records(paths, input_format, word_column, on_error, output_format)
    index, count_of_shards = shard
    # Text lines are documents of their own, so only column input has documents to keep whole.
    whole_documents = tagger.document_context and column_input
    if whole_documents and shard[1] > 1:
        raise CrftagError(
            "--shard: this model has document context and tags whole documents of column "
            "input together, in batches of varying size that `crftag merge` cannot interleave; "
            "tag the file in one process"
        )
    writer = None
    if count_of_shards > 1:
        writer = ShardWriter(output, index, count_of_shards, batch_size, output_format)
        records = writer.hash_input(records)
    batches = batches_of(records, batch_size, whole_documents=whole_documents)
    if count_of_shards > 1:
        batches = itertools.islice(batches, index, None, count_of_shards)
    count = 0
    settings = BatchSettings(
        output_format, batch_size, probs, nbest, min_confidence, token_offsets, column_input
    )
    for batch in batches:
        formatted = tag_batch(tagger, batch, settings)
        if writer is not None:
            writer.write(formatted)
        else:
            output.write("".join(formatted))
        output.flush()
        count += sum(not record.markup for record in batch)
    if writer is not None:
        writer.finish()
    return count


@dataclass(frozen=True)
class BatchSettings:
    """How :func:`tag_batch` tags and writes a batch (the options of :func:`predict_files`)."""

    output_format: str
    batch_size: int
    probs: str | None
    nbest: int
    min_confidence: float
    token_offsets: bool
    column_input: bool


def tag_batch(tagger: TaggerBase, batch: list[Record], settings: BatchSettings) -> list[str]:
    """Each record of ``batch`` tagged and formatted, in order: one process's and each
    ``--jobs`` worker's unit of work. CoNLL output needs only the Viterbi tags and takes the
    fast path unless spans are filtered by confidence."""
    token_lists = [list(record.sentence.tokens) for record in batch]
    documents = [record.document for record in batch]
    if settings.output_format != "conll" or settings.min_confidence > 0:
        predictions = tagger.predict(
            token_lists,
            probs=settings.probs,
            nbest=settings.nbest,
            min_confidence=settings.min_confidence,
            batch_size=settings.batch_size,
            documents=documents,
            texts=[record.text for record in batch],
            token_offsets=settings.token_offsets,
        )
    else:
        tags = tagger.tag(token_lists, settings.batch_size, documents)
        predictions = [
            Prediction(tokens=tokens, tags=tagged)
            for tokens, tagged in zip(token_lists, tags, strict=True)
        ]
    return [
        format_record(record, prediction, settings.output_format, settings.column_input)
        for record, prediction in zip(batch, predictions, strict=True)
    ]


@dataclass(frozen=True)
class PredictOptions:
    """What ``crftag predict`` is asked to do: the model, where to run it, and the options of
    :func:`predict_files`. Plain values, so worker processes receive them as they are."""

    model: str  # what -m takes: a bundled name, a run directory, a .pt, .npz or .onnx file
    device: str  # as asked: "auto", "cpu", "cuda", "cuda:1" (see crftag.inference.loading.load)
    input_format: str
    output_format: str
    batch_size: int = 64
    probs: str | None = None
    nbest: int = 1
    min_confidence: float = 0.0
    on_error: str = "stop"
    token_offsets: bool = False


def tag_files(
    options: PredictOptions,
    paths: Iterable[str],
    output: TextIO,
    *,
    shard: tuple[int, int] = (0, 1),
) -> int:
    """Load ``options.model`` and tag ``paths`` into ``output`` with :func:`predict_files`;
    return the number of sentences."""
    tagger = loading.load(options.model, options.device)
    return predict_files(
        tagger,
        paths,
        input_format=options.input_format,
        output_format=options.output_format,
        batch_size=options.batch_size,
        output=output,
        probs=options.probs,
        nbest=options.nbest,
        min_confidence=options.min_confidence,
        on_error=options.on_error,
        shard=shard,
        token_offsets=options.token_offsets,
    )
