"""The unlabelled text a truecaser for CoNLL-2003 is pretrained on: the sentences of a training
file, one a line (its words joined by spaces, labels stripped), less every line whose text is
also a sentence of the files held apart (dev and test), so that no dev or test sentence is seen
in pretraining.

    python benchmarks/truecaser_text.py TRAIN -o TEXT --remove DEV TEST...

Writes TEXT and reports on stderr how many lines were kept and how many removed (each removed
line is counted once for each of its copies in TRAIN).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402


def sentence_lines(path: str) -> list[str]:
    """Each sentence of a CoNLL file as its words joined by single spaces."""
    return [" ".join(sentence.tokens) for sentence in read_corpus(path, ColumnSpec())]


def pretraining_text(train: str, held_apart: list[str]) -> tuple[list[str], int]:
    """(the lines of ``train`` whose text is in none of ``held_apart``, the count removed)."""
    removed = {line for path in held_apart for line in sentence_lines(path)}
    lines = sentence_lines(train)
    kept = [line for line in lines if line not in removed]
    return kept, len(lines) - len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", help="The labelled training file (CoNLL columns).")
    parser.add_argument("-o", "--output", required=True, help="The text file to write.")
    parser.add_argument("--remove", nargs="+", required=True, help="Files held apart.")
    options = parser.parse_args()
    kept, removed = pretraining_text(options.train, options.remove)
    with open(options.output, "w", encoding="utf-8") as stream:
        stream.writelines(line + "\n" for line in kept)
    print(f"{options.output}: {len(kept)} lines kept, {removed} removed", file=sys.stderr)


if __name__ == "__main__":
    main()
