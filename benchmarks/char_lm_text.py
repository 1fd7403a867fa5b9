"""Unlabelled biomedical text for `crftag pretrain`: the sentences of the other corpora in the
repository BC5CDR is taken from, labels dropped, less every sentence of BC5CDR's dev and test
files, so that no sentence the rows are scored on is seen in pretraining.

    python benchmarks/char_lm_text.py -o TEXT --remove devel.tsv test.tsv [--megabytes N]
        [--clone DIR]

The repository (github.com/cambridgeltl/MTL-Bioinformatics-2016) is cloned into DIR (an
existing clone is reused) and checked out at the commit the BC5CDR rows were measured on. One
labelled file of each underlying corpus is read (the IOB copy; the per-type copies of a corpus
hold the same sentences): PubMed abstracts and full-text articles on genes, proteins, anatomy,
species, diseases and cells, none of them BC5CDR. Each sentence becomes one line (its tokens
joined by single spaces); a line that occurs again is written once. The lines are written in
an order shuffled with a fixed seed (so that a prefix is a sample of every corpus, and the last
lines `crftag pretrain` holds out are too), up to N megabytes when given.

Writes TEXT and reports on stderr the lines kept, the repeats dropped and the lines removed
because BC5CDR's dev or test holds them.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from truecaser_text import sentence_lines  # noqa: E402
from your_data_corpora import SOURCES  # noqa: E402

# BC4CHEMD and JNLPBA's training file are too large for the repository's stored copy; BC5CDR and
# its per-type copies are the corpus the text is for.
CORPORA = (
    "AnatEM-IOB", "BC2GM-IOB", "BioNLP09-IOB", "BioNLP11EPI-IOB", "BioNLP11ID-IOB",
    "BioNLP13CG-IOB", "BioNLP13GE-IOB", "BioNLP13PC-IOB", "CRAFT-IOB", "Ex-PTM-IOB",
    "NCBI-disease-IOB", "linnaeus-IOB",
)  # fmt: skip
FILES = ("train.tsv", "devel.tsv", "test.tsv")


def sparse_checkout(clone: str) -> None:
    """The repository in ``clone`` at BC5CDR's pinned commit, with only CORPORA's folders
    written out (the whole tree is several hundred MB)."""
    source = SOURCES["bc5cdr"]
    if not os.path.isdir(os.path.join(clone, ".git")):
        clone_argv = ["git", "clone", "-q", "--no-checkout", source["repository"], clone]
        subprocess.run(clone_argv, check=True)
    folders = [f"data/{corpus}" for corpus in CORPORA]
    subprocess.run(["git", "-C", clone, "sparse-checkout", "set", *folders], check=True)
    subprocess.run(["git", "-C", clone, "checkout", "-q", source["commit"]], check=True)


def corpus_files(clone: str) -> list[str]:
    """The labelled files the text is read from, in a fixed order, those present."""
    paths = [os.path.join(clone, "data", corpus, name) for corpus in CORPORA for name in FILES]
    return [path for path in paths if os.path.isfile(path)]


def pretraining_text(sources: list[str], held_apart: list[str]) -> tuple[list[str], int, int]:
    """(the distinct lines of ``sources`` in none of ``held_apart``, repeats dropped, removed)."""
    removed_text = {line for path in held_apart for line in sentence_lines(path)}
    kept, seen, repeats, removed = [], set(), 0, 0
    for path in sources:
        for line in sentence_lines(path):
            if line in removed_text:
                removed += 1
            elif line in seen:
                repeats += 1
            else:
                seen.add(line)
                kept.append(line)
    return kept, repeats, removed


def within_size(lines: list[str], megabytes: float | None) -> list[str]:
    """The first of ``lines`` whose UTF-8 bytes, a newline each, add up to at most
    ``megabytes`` million (all of them when None)."""
    if megabytes is None:
        return lines
    budget, size = megabytes * 1e6, 0
    for count, line in enumerate(lines):
        size += len(line.encode("utf-8")) + 1
        if size > budget:
            return lines[:count]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="The text file to write.")
    parser.add_argument("--remove", nargs="+", required=True, help="BC5CDR's dev and test.")
    parser.add_argument("--megabytes", type=float, default=None, help="Stop at this size.")
    parser.add_argument("--clone", default="runs/corpora/clones/bc5cdr-text")
    options = parser.parse_args()
    sparse_checkout(options.clone)
    sources = corpus_files(options.clone)
    kept, repeats, removed = pretraining_text(sources, options.remove)
    random.Random(1).shuffle(kept)
    kept = within_size(kept, options.megabytes)
    with open(options.output, "w", encoding="utf-8") as stream:
        stream.writelines(line + "\n" for line in kept)
    size = os.path.getsize(options.output)
    print(
        f"{options.output}: {len(kept)} lines ({size / 1e6:.1f} MB) from {len(sources)} files "
        f"kept, {repeats} repeats dropped, {removed} removed (in {', '.join(options.remove)})",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
