"""Unlabelled text for `crftag pretrain`, for the char_lm rows of benchmarks/your_data.py: text
of the corpus's domain from a public repository at a pinned commit, less every line that is
also a sentence of the corpus's dev or test file, so that nothing the rows are scored on is seen
in pretraining.

    python benchmarks/char_lm_text.py CORPUS -o TEXT --remove DEV TEST [--megabytes N]
        [--clone DIR]

- ``bc5cdr``: the sentences of the twelve other corpora of the repository BC5CDR is taken from
  (github.com/cambridgeltl/MTL-Bioinformatics-2016, the commit of BC5CDR's rows): PubMed
  abstracts and full-text articles on genes, proteins, anatomy, species, diseases and cells.
  One labelled file set of each corpus is read (its IOB copy; the per-type copies hold the
  same sentences), each sentence a line, its tokens joined by single spaces. A line is
  removed when it equals a dev or test sentence so joined.
- ``btc``: the tweets of TweetEval (github.com/cardiffnlp/tweeteval at 4fbd22c; 2016-2019,
  user names replaced by ``@user``), one a line, as written. A tweet is removed when, all
  white space taken out, it equals a dev or test sentence of BTC with its tokens run together
  (BTC's text is tokenized, TweetEval's is not).

A line that occurs again is written once. The lines are written in an order shuffled with a
fixed seed (so that a prefix is a sample of every source, and the last lines `crftag pretrain`
holds out are too), up to N megabytes when given. Only the folders read are checked out.
Reports on stderr the lines kept, the repeats dropped and the lines removed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from truecaser_text import sentence_lines  # noqa: E402
from your_data_corpora import SOURCES, checkout  # noqa: E402

# BC4CHEMD and JNLPBA are left out (their files are the largest; the text was measured without
# them); BC5CDR and its per-type copies are the corpus the text is for.
BIO_CORPORA = (
    "AnatEM-IOB", "BC2GM-IOB", "BioNLP09-IOB", "BioNLP11EPI-IOB", "BioNLP11ID-IOB",
    "BioNLP13CG-IOB", "BioNLP13GE-IOB", "BioNLP13PC-IOB", "CRAFT-IOB", "Ex-PTM-IOB",
    "NCBI-disease-IOB", "linnaeus-IOB",
)  # fmt: skip
# Every TweetEval text file but sentiment's training file (the text was measured without it).
TWEET_FILES = tuple(
    f"datasets/{task}/{split}_text.txt"
    for task in ("emoji", "emotion", "hate", "irony", "offensive", "sentiment",
                 "stance/abortion", "stance/atheism", "stance/climate", "stance/feminist",
                 "stance/hillary")
    for split in ("train", "val", "test")
    if (task, split) != ("sentiment", "train")
)  # fmt: skip
TEXTS = {
    "bc5cdr": {
        "repository": SOURCES["bc5cdr"]["repository"],
        "commit": SOURCES["bc5cdr"]["commit"],
        "files": tuple(
            f"data/{corpus}/{name}"
            for corpus in BIO_CORPORA
            for name in ("train.tsv", "devel.tsv", "test.tsv")
        ),
        "columns": True,  # labelled files: one token and its tag a line
    },
    "btc": {
        "repository": "https://github.com/cardiffnlp/tweeteval",
        "commit": "4fbd22c",
        "files": TWEET_FILES,
        "columns": False,  # one tweet a line
    },
}


def source_lines(path: str, columns: bool) -> list[str]:
    """The lines of a source file: its sentences' tokens joined by spaces when ``columns``,
    else its non-blank lines, stripped."""
    if columns:
        return sentence_lines(path)
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def removal_key(line: str, columns: bool) -> str:
    """What a line is compared by: as it is for tokenized text, without white space for raw."""
    return line if columns else "".join(line.split())


def pretraining_text(
    sources: list[str], held_apart: list[str], columns: bool = True
) -> tuple[list[str], int, int]:
    """(the distinct lines of ``sources`` in none of ``held_apart``, repeats dropped, removed)."""
    removed_text = {
        removal_key(line, columns) for path in held_apart for line in sentence_lines(path)
    }
    kept, seen, repeats, removed = [], set(), 0, 0
    for path in sources:
        for line in source_lines(path, columns):
            if removal_key(line, columns) in removed_text:
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
    parser.add_argument("corpus", choices=sorted(TEXTS))
    parser.add_argument("-o", "--output", required=True, help="The text file to write.")
    parser.add_argument("--remove", nargs="+", required=True, help="The corpus's dev and test.")
    parser.add_argument("--megabytes", type=float, default=None, help="Stop at this size.")
    parser.add_argument("--clone", help="default: runs/corpora/clones/CORPUS-text")
    options = parser.parse_args()
    text = TEXTS[options.corpus]
    clone = options.clone or os.path.join("runs", "corpora", "clones", f"{options.corpus}-text")
    checkout(text, clone, folders=sorted({os.path.dirname(path) for path in text["files"]}))
    sources = [os.path.join(clone, path) for path in text["files"]]
    kept, repeats, removed = pretraining_text(sources, options.remove, text["columns"])
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
