"""Fetch the corpora of benchmarks/your_data.py, and BC5CDR's dictionaries, from their public
repositories.

    python benchmarks/your_data_corpora.py DEST [--clones DIR]

Each repository is cloned (into DIR, default DEST/clones; an existing clone is reused) and
checked out at the commit the results were measured on, and the corpus's three files are
copied to DEST/CORPUS/ as they are. A corpus's dictionary file (``TYPE<tab>entry`` a line) is
split into one file a type beside them, each entry's line as it is, in the file's order.
Nothing of either corpus or dictionary is kept in this repository.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

SOURCES = {
    "btc": {
        "repository": "https://github.com/GateNLP/broad_twitter_corpus",
        "commit": "0c45ef7",
        "files": {
            "train.conll": "train_dev_test_conll/btc.train",
            "dev.conll": "train_dev_test_conll/btc.dev",
            "test.conll": "train_dev_test_conll/btc.test",
        },
    },
    "bc5cdr": {
        "repository": "https://github.com/cambridgeltl/MTL-Bioinformatics-2016",
        "commit": "df0df02",
        "files": {
            "train.tsv": "data/BC5CDR-IOB/train.tsv",
            "devel.tsv": "data/BC5CDR-IOB/devel.tsv",
            "test.tsv": "data/BC5CDR-IOB/test.tsv",
        },
    },
}

# AutoNER's BC5CDR dictionary, from MeSH and CTD (Shang et al., EMNLP 2018).
DICTIONARIES = {
    "bc5cdr": {
        "repository": "https://github.com/shangjingbo1226/AutoNER",
        "commit": "75f8d09",
        "file": "data/BC5CDR/dict_core.txt",
        "types": {"Chemical": "chemicals.txt", "Disease": "diseases.txt"},
    },
}


def checkout(source: dict, clone: str, folders: list[str] | None = None) -> None:
    """``source``'s repository in ``clone`` at its pinned commit; only ``folders`` written out
    when given (a sparse checkout: the files read, not the whole repository)."""
    if not os.path.isdir(os.path.join(clone, ".git")):
        sparse = ["--no-checkout"] if folders else []
        argv = ["git", "clone", "--quiet", *sparse, source["repository"], clone]
        subprocess.run(argv, check=True)
    if folders:
        subprocess.run(["git", "-C", clone, "sparse-checkout", "set", *folders], check=True)
    subprocess.run(["git", "-C", clone, "checkout", "--quiet", source["commit"]], check=True)


def fetch(corpus: str, dest: str, clones: str) -> None:
    source = SOURCES[corpus]
    clone = os.path.join(clones, corpus)
    checkout(source, clone)
    os.makedirs(os.path.join(dest, corpus), exist_ok=True)
    for name, path in source["files"].items():
        shutil.copyfile(os.path.join(clone, path), os.path.join(dest, corpus, name))
    print(f"{corpus}: {', '.join(source['files'])} in {os.path.join(dest, corpus)}")


def split_dictionary(path: str, types: dict[str, str]) -> dict[str, list[str]]:
    """The entries of ``path``'s ``TYPE<tab>entry`` lines by the file each type goes to, in
    the file's order. A line of another type, or without a tab, is a ValueError naming it."""
    entries: dict[str, list[str]] = {name: [] for name in types.values()}
    with open(path, encoding="utf-8", newline="") as handle:
        for number, line in enumerate(handle, 1):
            label, tab, entry = line.rstrip("\n").partition("\t")
            if not tab or label not in types:
                known = ", ".join(types)
                raise ValueError(f"{path}:{number}: expected TYPE<tab>entry with TYPE {known}")
            entries[types[label]].append(entry)
    return entries


def fetch_dictionary(corpus: str, dest: str, clones: str) -> None:
    """The corpus's dictionary, split into DEST/CORPUS/TYPE-FILE (one entry a line)."""
    source = DICTIONARIES[corpus]
    clone = os.path.join(clones, f"{corpus}-dictionary")
    checkout(source, clone)
    split = split_dictionary(os.path.join(clone, source["file"]), source["types"])
    for name, entries in split.items():
        with open(os.path.join(dest, corpus, name), "w", encoding="utf-8", newline="") as handle:
            handle.writelines(entry + "\n" for entry in entries)
    print(f"{corpus}: {', '.join(split)} in {os.path.join(dest, corpus)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest")
    parser.add_argument("--clones", default=None)
    args = parser.parse_args()
    clones = args.clones or os.path.join(args.dest, "clones")
    for corpus in SOURCES:
        fetch(corpus, args.dest, clones)
    for corpus in DICTIONARIES:
        try:
            fetch_dictionary(corpus, args.dest, clones)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)


if __name__ == "__main__":
    main()
