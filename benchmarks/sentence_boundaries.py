"""Sentence-boundary errors of crftag's document splitter, against gold sentences.

    python benchmarks/sentence_boundaries.py [--splitter segtok segtok-plain pysbd]
        [--examples 5] [--repeats 3] [--record] [--json PATH]

Each splitter runs through crftag.data.sentences.split_sentences_with, so all are measured
through the same paragraph split and the same mapping of sentence strings back to offsets:
- segtok: crftag's split_sentences as shipped (segtok, spaces before terminals dropped),
- segtok-plain: segtok.segmenter.split_multi on the paragraph as it is,
- pysbd: pysbd.Segmenter(language="en", clean=False).segment.

Documents, rebuilt as raw text from the gold sentences:
- CoNLL-2003 eng.testb: a -DOCSTART- line starts a document; tokens are joined by one space and
  sentences by one space, so no line break gives a boundary away.
- UD English-EWT test: each sentence's "# text =", joined by one space within a paragraph
  ("# newpar") and by a blank line between paragraphs; "# newdoc" starts a document.
- The same UD documents hard-wrapped: a space becomes a line break wherever a line has reached
  72 characters, as in e-mail or plain-text files (offsets do not move).

A boundary is the end offset of a sentence that is not its document's last. Reported per corpus:
boundary precision, recall and F1, missed and spurious boundaries, the gold sentences whose exact
span was predicted, and gold sentences per second of splitting (median of --repeats runs).
--examples N prints N missed and N spurious boundaries per corpus, with context, to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from crftag.data.conll import ColumnSpec, open_binary, read_columns, read_corpus  # noqa: E402
from crftag.data.sentences import split_sentences, split_sentences_with  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")
CORPORA = {
    "conll2003_testb": os.path.join(DATA, "conll2003", "eng.testb"),
    "ud_ewt_test": os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-test.conllu"),
}
CHOSEN = "segtok"
SPLITTERS = ("segtok", "segtok-plain", "pysbd")
WRAP_WIDTH = 72
CONTEXT = 40  # characters shown on each side of an example boundary


@dataclass(frozen=True)
class Document:
    """A document's raw text and the [start, end) offsets of its gold sentences."""

    text: str
    sentences: list[tuple[int, int]]


def join_document(paragraphs: list[list[str]]) -> Document:
    """Sentences joined by one space within a paragraph, paragraphs by a blank line."""
    text, sentences = "", []
    for number, paragraph in enumerate(paragraphs):
        for index, sentence in enumerate(paragraph):
            text += ("\n\n" if number else "") if index == 0 else " "
            sentences.append((len(text), len(text) + len(sentence)))
            text += sentence
    return Document(text, sentences)


def conll_documents(path: str) -> list[Document]:
    sentences = read_corpus(path, ColumnSpec("conll", 0, None))
    grouped = itertools.groupby(sentences, key=lambda sentence: sentence.document)
    return [join_document([[" ".join(s.tokens) for s in group]]) for _, group in grouped]


def ud_documents(path: str) -> list[Document]:
    documents: list[list[list[str]]] = []
    with open_binary(path) as stream:
        read = list(read_columns(stream, path, ColumnSpec("conllu", 1, None), keep_raw=True))
    for sentence in read:
        comments = [line for line in sentence.raw if line.startswith("#")]
        text = next(line.split("=", 1)[1] for line in comments if line.startswith("# text ="))
        if any(line.startswith("# newdoc") for line in comments) or not documents:
            documents.append([])
        if any(line.startswith("# newpar") for line in comments) or not documents[-1]:
            documents[-1].append([])
        documents[-1][-1].append(text.strip())
    return [join_document(paragraphs) for paragraphs in documents]


def wrapped(document: Document, width: int = WRAP_WIDTH) -> Document:
    """The document with a space turned into a line break wherever a line reached ``width``."""
    characters = list(document.text)
    line = 0
    for index, character in enumerate(characters):
        if character == " " and line >= width:
            characters[index] = "\n"
        line = 0 if characters[index] == "\n" else line + 1
    return Document("".join(characters), document.sentences)


def make_splitter(name: str):
    """The splitter called ``name``, as text -> sentence offsets."""
    if name == "segtok":
        return split_sentences
    if name == "segtok-plain":
        from segtok.segmenter import split_multi

        return lambda text: split_sentences_with(text, split_multi)
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False)
    return lambda text: split_sentences_with(text, segmenter.segment)


def boundaries(sentences: list[tuple[int, int]]) -> set[int]:
    """The end offsets of all sentences but the last."""
    return {end for _, end in sentences[:-1]}


def score(documents: list[Document], predicted: list[list[tuple[int, int]]]) -> dict:
    """Boundary counts and the exact-span rate over all documents, with the errors' offsets."""
    found = missed = spurious = exact = 0
    errors: dict[str, list[tuple[int, int]]] = {"missed": [], "spurious": []}
    for number, (document, sentences) in enumerate(zip(documents, predicted, strict=True)):
        gold, guessed = boundaries(document.sentences), boundaries(sentences)
        found += len(gold & guessed)
        missed += len(gold - guessed)
        spurious += len(guessed - gold)
        exact += len(set(document.sentences) & set(sentences))
        errors["missed"] += [(number, offset) for offset in sorted(gold - guessed)]
        errors["spurious"] += [(number, offset) for offset in sorted(guessed - gold)]
    precision = found / (found + spurious) if found + spurious else 0.0
    recall = found / (found + missed) if found + missed else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    gold_sentences = sum(len(document.sentences) for document in documents)
    return {
        "documents": len(documents),
        "gold_sentences": gold_sentences,
        "predicted_sentences": sum(len(sentences) for sentences in predicted),
        "gold_boundaries": found + missed,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "missed_boundaries": missed,
        "spurious_boundaries": spurious,
        "exact_sentences": exact,
        "exact_match_rate": round(exact / gold_sentences, 4),
        "errors": errors,
    }


def measure(documents: list[Document], splitter, repeats: int) -> dict:
    """:func:`score` of one splitter, with gold sentences per second of splitting."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        predicted = [splitter(document.text) for document in documents]
        seconds.append(time.perf_counter() - started)
    result = score(documents, predicted)
    result["seconds"] = round(statistics.median(seconds), 4)
    result["sentences_per_second"] = round(result["gold_sentences"] / result["seconds"])
    return result


def show_examples(corpus: str, documents: list[Document], errors: dict, count: int) -> None:
    """``count`` missed and ``count`` spurious boundaries, spread over the corpus, to stderr."""
    for kind, places in errors.items():
        print(f"\n{corpus}: {kind} boundaries ({len(places)})", file=sys.stderr)
        for place in places[:: max(1, len(places) // count)][:count]:
            number, offset = place
            text = documents[number].text
            before = text[max(0, offset - CONTEXT) : offset].replace("\n", "¶")
            after = text[offset : offset + CONTEXT].replace("\n", "¶")
            print(f"  ...{before} ‖ {after}...", file=sys.stderr)


def table(results: dict) -> str:
    header = (
        f"{'splitter':12} {'corpus':19} {'gold':>5} {'pred':>5} {'P':>6} {'R':>6} {'F1':>6} "
        f"{'missed':>6} {'spur':>5} {'exact':>6} {'sent/s':>7}"
    )
    rows = [header]
    for splitter, corpora in results.items():
        for corpus, r in corpora.items():
            rows.append(
                f"{splitter:12} {corpus:19} {r['gold_sentences']:5} {r['predicted_sentences']:5} "
                f"{r['precision']:6.3f} {r['recall']:6.3f} {r['f1']:6.3f} "
                f"{r['missed_boundaries']:6} {r['spurious_boundaries']:5} "
                f"{r['exact_match_rate']:6.3f} {r['sentences_per_second']:7}"
            )
    return "\n".join(rows)


def versions(names) -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in names}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splitter", nargs="+", choices=SPLITTERS, default=list(SPLITTERS))
    parser.add_argument("--examples", type=int, default=0, metavar="N")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args(argv)
    args.json = args.json or output.result_path("sentence_boundaries.json", args.record)

    ud = ud_documents(CORPORA["ud_ewt_test"])
    corpora = {
        "conll2003_testb": conll_documents(CORPORA["conll2003_testb"]),
        "ud_ewt_test": ud,
        "ud_ewt_test_wrapped": [wrapped(document) for document in ud],
    }
    results = {}
    for name in args.splitter:
        splitter = make_splitter(name)
        results[name] = {}
        for corpus, documents in corpora.items():
            result = measure(documents, splitter, args.repeats)
            errors = result.pop("errors")
            if args.examples:
                show_examples(f"{name} {corpus}", documents, errors, args.examples)
            results[name][corpus] = result
    print(table(results))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    payload = {
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "command": "python benchmarks/sentence_boundaries.py",
        "chosen": CHOSEN,
        "machine": {"cpu": platform.machine(), "python": platform.python_version()},
        "versions": versions({name.split("-")[0] for name in args.splitter}),
        "wrap_width": WRAP_WIDTH,
        "results": results,
    }
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2)
        handle.write("\n")
    print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
