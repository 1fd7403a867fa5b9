"""Streaming prediction: sentences in (text, tokens, CoNLL or CoNLL-U), one record out per sentence,
in input order, a batch at a time, flushed after every batch so a pipeline sees progress."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

from crftag.conll import (
    ColumnSpec,
    Sentence,
    format_conll_block,
    open_binary,
    read_columns,
    read_lines,
    source_name,
)
from crftag.errors import CrftagError
from crftag.tagger import Prediction, Tagger
from crftag.tokenize import tokenize

__all__ = ["INPUT_FORMATS", "OUTPUT_FORMATS", "predict_files", "read_sentences"]

INPUT_FORMATS = ("text", "tokens", "conll", "conllu")
OUTPUT_FORMATS = ("conll", "jsonl")


@dataclass(frozen=True)
class Record:
    """One unit of input: a sentence, or (column input only) a block of markup lines with no word,
    such as ``-DOCSTART-``, that is written back in CoNLL output and is no record in JSON lines."""

    sentence: Sentence
    markup: bool = False


def read_sentences(
    path: str, input_format: str, word_column: int | None, on_error: str = "stop"
) -> Iterator[Record]:
    """Records of one input, lazily. ``text`` lines are tokenized, ``tokens`` lines split on
    whitespace; every line of those two is one sentence, an empty line an empty sentence, and
    with ``on_error="skip"`` an unreadable line too."""
    source = source_name(path)
    with open_binary(path) as stream:
        if input_format in ("text", "tokens"):
            split = tokenize if input_format == "text" else str.split
            for number, line in read_lines(stream, source, on_error, allow_nul=True):
                yield Record(Sentence(tuple(split(line)) if line else (), None, number))
            return
        spec = ColumnSpec.for_format(input_format, word_column, tag_column=None)
        spec = ColumnSpec(spec.format, spec.word_column, tag_column=None)
        sentences = read_columns(
            stream, source, spec, keep_raw=True, keep_markup=True, on_error=on_error
        )
        for sentence in sentences:
            yield Record(sentence, markup=not sentence.tokens)


def _batches(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    """Batches of records. An input error ends the stream, but only after the records read
    before it have been handed out, so everything before a bad line is still written."""
    batch: list[Record] = []
    try:
        for record in records:
            batch.append(record)
            if len(batch) == size:
                yield batch
                batch = []
    except CrftagError:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def format_record(
    record: Record, prediction: Prediction, output_format: str, column_input: bool
) -> str:
    if output_format == "jsonl":
        if record.markup:
            return ""
        return json.dumps(prediction.to_dict(), ensure_ascii=False) + "\n"
    if column_input:
        return format_conll_block(record.sentence, prediction.tags)
    pairs = zip(prediction.tokens, prediction.tags, strict=True)
    return "".join(f"{token}\t{tag}\n" for token, tag in pairs) + "\n"


def predict_files(
    tagger: Tagger,
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
) -> int:
    """Tag every input and write the records to ``output``; return the number of sentences.

    JSON lines carry everything :meth:`Tagger.predict` computes (span confidence, sequence
    probability, and marginals or n-best on request); CoNLL output needs only the Viterbi tags,
    and takes the fast path unless spans are filtered by confidence.
    """
    column_input = input_format in ("conll", "conllu")
    word_column = tagger.loaded.config.data.word_column
    records = itertools.chain.from_iterable(
        read_sentences(path, input_format, word_column, on_error) for path in paths
    )
    count = 0
    full = output_format == "jsonl" or min_confidence > 0
    for batch in _batches(records, batch_size):
        token_lists = [list(record.sentence.tokens) for record in batch]
        if full:
            predictions = tagger.predict(
                token_lists,
                probs=probs,
                nbest=nbest,
                min_confidence=min_confidence,
                batch_size=batch_size,
            )
        else:
            predictions = [
                Prediction(tokens=tokens, tags=tags)
                for tokens, tags in zip(
                    token_lists, tagger.tag(token_lists, batch_size), strict=True
                )
            ]
        output.write(
            "".join(
                format_record(record, prediction, output_format, column_input)
                for record, prediction in zip(batch, predictions, strict=True)
            )
        )
        output.flush()
        count += sum(not record.markup for record in batch)
    return count
