"""Fetch the corpora of benchmarks/your_data.py from their public repositories.

    python benchmarks/your_data_corpora.py DEST [--clones DIR]

Each repository is cloned (into DIR, default DEST/clones; an existing clone is reused) and
checked out at the commit the results were measured on, and the corpus's three files are
copied to DEST/CORPUS/ as they are. Nothing of either corpus is kept in this repository.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess

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


def fetch(corpus: str, dest: str, clones: str) -> None:
    source = SOURCES[corpus]
    clone = os.path.join(clones, corpus)
    if not os.path.isdir(os.path.join(clone, ".git")):
        subprocess.run(["git", "clone", "--quiet", source["repository"], clone], check=True)
    subprocess.run(["git", "-C", clone, "checkout", "--quiet", source["commit"]], check=True)
    os.makedirs(os.path.join(dest, corpus), exist_ok=True)
    for name, path in source["files"].items():
        shutil.copyfile(os.path.join(clone, path), os.path.join(dest, corpus, name))
    print(f"{corpus}: {', '.join(source['files'])} in {os.path.join(dest, corpus)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest")
    parser.add_argument("--clones", default=None)
    args = parser.parse_args()
    for corpus in SOURCES:
        fetch(corpus, args.dest, args.clones or os.path.join(args.dest, "clones"))


if __name__ == "__main__":
    main()
