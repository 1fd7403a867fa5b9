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
- ``conll03``: Reuters-21578 (Reuters newswire of 1987; CoNLL-2003 is Reuters of 1996-97), its
  22 SGML files as kept in github.com/loki86/ksr_zadanie1V2 at d16457f (that copy's
  ``reut2-003.sgm`` is cut short; its ``reut2-003-full.sgm`` is the whole file). Each story's
  title and body: the hard-wrapped lines of a paragraph joined, the closing "Reuter" dropped,
  split into sentences (crftag.data.sentences) and each sentence into tokens by crftag's
  tokenizer, joined by single spaces, as CoNLL-2003's text is. A line is removed when, all white
  space taken out, it equals a dev or test sentence so taken.

A line that occurs again is written once. The lines are written in an order shuffled with a
fixed seed (so that a prefix is a sample of every source, and the last lines `crftag pretrain`
holds out are too), up to N megabytes when given. Only the folders read are checked out.
Reports on stderr the lines kept, the repeats dropped and the lines removed.
"""

from __future__ import annotations

import argparse
import html
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from your_data_corpora import SOURCES, checkout  # noqa: E402

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.data.sentences import split_sentences  # noqa: E402
from crftag.data.tokenize import tokenize  # noqa: E402

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
        "reader": "columns",  # labelled files: one token and its tag a line
    },
    "btc": {
        "repository": "https://github.com/cardiffnlp/tweeteval",
        "commit": "4fbd22c",
        "files": TWEET_FILES,
        "reader": "lines",  # one tweet a line
    },
    "conll03": {
        "repository": "https://github.com/loki86/ksr_zadanie1V2",
        "commit": "d16457f",
        "files": tuple(
            "reut2-003-full.sgm" if number == 3 else f"reut2-{number:03d}.sgm"
            for number in range(22)
        ),
        "reader": "reuters",  # SGML stories, hard-wrapped
    },
}


def sentence_lines(path: str) -> list[str]:
    """Each sentence of a CoNLL file as its words joined by single spaces."""
    return [" ".join(sentence.tokens) for sentence in read_corpus(path, ColumnSpec())]


def source_lines(path: str, reader: str) -> list[str]:
    """The lines of a source file: its sentences' tokens joined by spaces for ``columns`` and
    ``reuters``, else (``lines``) its non-blank lines, stripped, without U+FEFF: TweetEval's
    emotion test file has one at the start of a line in its middle (a file joined with cat), an
    invisible character that crftag's line reader refuses where it cannot be a byte-order mark."""
    if reader == "columns":
        return sentence_lines(path)
    if reader == "reuters":
        return reuters_lines(path)
    with open(path, encoding="utf-8") as handle:
        lines = (line.replace("\ufeff", "").strip() for line in handle)
        return [line for line in lines if line]


def reuters_lines(path: str) -> list[str]:
    """The sentences of the titles and bodies of a Reuters-21578 SGML file, tokenized, each as
    its tokens joined by single spaces."""
    with open(path, encoding="latin-1") as handle:  # the files are 7-bit, with stray bytes
        sgml = handle.read()
    lines = []
    for story in _STORY.findall(sgml):
        for part in ("TITLE", "BODY"):
            for paragraph in _paragraphs(_field(story, part)):
                for start, end in split_sentences(paragraph):
                    lines.append(" ".join(tokenize(paragraph[start:end])))
    return lines


_STORY = re.compile(r"<REUTERS\b.*?</REUTERS>", re.S)
_CONTROL = re.compile(r"&#\d+;")  # the wire's control characters, written as entities


def _field(story: str, name: str) -> str:
    """The unescaped text of a story's <TITLE> or <BODY> ("" when it has none)."""
    found = re.search(f"<{name}>(.*?)</{name}>", story, re.S)
    return html.unescape(_CONTROL.sub("", found.group(1))) if found else ""


def _paragraphs(text: str) -> list[str]:
    """A field's paragraphs, each on one line: an indented line begins one, the others are
    hard-wrapped lines of it; the closing "Reuter" signature is dropped."""
    paragraphs: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip() or line.strip().lower() == "reuter":
            continue
        if line[:1].isspace() or not paragraphs:
            paragraphs.append([])
        paragraphs[-1].append(line.strip())
    return [" ".join(lines) for lines in paragraphs]


def removal_key(line: str, reader: str) -> str:
    """What a line is compared by: as it is for labelled text, without white space otherwise."""
    return line if reader == "columns" else "".join(line.split())


def pretraining_text(
    sources: list[str], held_apart: list[str], reader: str = "columns"
) -> tuple[list[str], int, int]:
    """(the distinct lines of ``sources`` in none of ``held_apart``, repeats dropped, removed)."""
    removed_text = {
        removal_key(line, reader) for path in held_apart for line in sentence_lines(path)
    }
    kept, seen, repeats, removed = [], set(), 0, 0
    for path in sources:
        for line in source_lines(path, reader):
            if removal_key(line, reader) in removed_text:
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
    folders = sorted({os.path.dirname(path) for path in text["files"]})
    checkout(text, clone, folders=folders if all(folders) else None)  # "": files at the root
    sources = [os.path.join(clone, path) for path in text["files"]]
    kept, repeats, removed = pretraining_text(sources, options.remove, text["reader"])
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
