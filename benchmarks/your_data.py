"""Your own data: the CoNLL-2003 recipe, ``init_from: en-ner`` with and without a label map, and
``crftag tune``, on NER corpora from outside news.

    python benchmarks/your_data.py CORPUS --data DIR [--tune-minutes M] [--threads T] [--out DIR]

CORPUS is one of :data:`CORPORA`; DIR holds its three files, taken from the public repository
named beside it (``benchmarks/your_data_corpora.py`` copies them there from a clone; ``make
bench-your-data`` runs both). Four rows, each a normal
``crftag`` command, its wall time measured around it:

    scratch      configs/conll03.yaml with the data paths changed (and tag_scheme iob2)
    init_from    the same recipe with ``train.init_from: en-ner`` and no ``model`` section:
                 the architecture is en-ner's
    label_map    the same, with the corpus's ``train.label_map`` and ``train.drop_old_labels``
    tune         ``crftag tune`` of the scratch config for M minutes, its best trial's test F1

Each row's run directory is kept under OUT/CORPUS; a rerun skips the rows already done (and
continues the tuning study), so an interrupted benchmark resumes. Writes
benchmarks/results/your_data.json (one entry per corpus) and prints the rows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import yaml
from provenance import commit  # benchmarks/provenance.py, beside this script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RECIPE = os.path.join(ROOT, "configs", "conll03.yaml")
RESULTS = os.path.join(HERE, "results", "your_data.json")
CRFTAG = [sys.executable, "-m", "crftag"]

CORPORA = {
    "btc": {
        "title": "Broad Twitter Corpus (tweets; PER, LOC, ORG)",
        "source": "github.com/GateNLP/broad_twitter_corpus 0c45ef7, train_dev_test_conll/btc.*",
        "files": ("train.conll", "dev.conll", "test.conll"),
        # Its labels are en-ner's own, so there is nothing to map; the row drops MISC.
        "label_map": None,
    },
    "bc5cdr": {
        "title": "BC5CDR (PubMed abstracts; Chemical, Disease)",
        "source": "github.com/cambridgeltl/MTL-Bioinformatics-2016 df0df02, data/BC5CDR-IOB",
        "files": ("train.tsv", "devel.tsv", "test.tsv"),
        "label_map": {"Chemical": "MISC", "Disease": "MISC"},
    },
}


def recipe_config(corpus: str, data_dir: str) -> dict:
    """configs/conll03.yaml as a dict, read from the corpus's files (absolute paths)."""
    with open(RECIPE, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    train, dev, test = (
        os.path.abspath(os.path.join(data_dir, f)) for f in CORPORA[corpus]["files"]
    )
    config["data"].update(train=train, dev=dev, test=test, tag_scheme="iob2")
    embeddings = config["model"]["embeddings"]
    config["model"]["embeddings"] = os.path.normpath(
        os.path.join(os.path.dirname(RECIPE), embeddings)
    )
    return config


def row_configs(corpus: str, data_dir: str) -> dict[str, dict]:
    scratch = recipe_config(corpus, data_dir)
    warm = {key: value for key, value in scratch.items() if key != "model"}
    warm["train"] = dict(scratch["train"], init_from="en-ner")
    mapped = dict(warm, train=dict(warm["train"], drop_old_labels=True))
    if CORPORA[corpus]["label_map"]:
        mapped["train"]["label_map"] = CORPORA[corpus]["label_map"]
    return {"scratch": scratch, "init_from": warm, "label_map": mapped, "tune": scratch}


def command(row: str, config_path: str, run_dir: str, tune_minutes: float) -> list[str]:
    """The row's crftag command; rerun, it continues the study, or the training an interruption
    left unfinished."""
    if row == "tune":
        budget = ["--trials", "200", "--time", str(tune_minutes)]
        return CRFTAG + ["tune", config_path, "-o", run_dir, *budget]
    if os.path.exists(os.path.join(run_dir, "resume.pt")):
        return CRFTAG + ["train", "--resume", run_dir]
    return CRFTAG + ["train", config_path, "-o", run_dir]


def test_f1(row: str, run_dir: str) -> tuple[float, float]:
    """(dev F1, test F1) of the row's model, in percent."""
    if row == "tune":
        with open(os.path.join(run_dir, "best.json"), encoding="utf-8") as handle:
            best = json.load(handle)["best"]
        return best["dev"], best["test"]
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    return metrics["dev"], metrics["test"]


def run_row(row: str, config: dict, out_dir: str, args) -> dict:
    config_path = os.path.join(out_dir, f"{row}.yaml")
    with open(config_path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    run_dir = os.path.join(out_dir, row)
    argv = command(row, config_path, run_dir, args.tune_minutes)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    started = time.perf_counter()
    with open(os.path.join(out_dir, f"{row}.log"), "a", encoding="utf-8") as log:
        subprocess.run(argv, check=True, cwd=ROOT, env=env, stdout=log, stderr=log)
    minutes = (time.perf_counter() - started) / 60
    dev, test = test_f1(row, run_dir)
    shown = " ".join(argv[3:]).replace(ROOT + os.sep, "")
    return {
        "command": "crftag " + shown,
        "dev_f1": round(100 * dev, 2),
        "test_f1": round(100 * test, 2),
        "minutes": round(minutes, 1),
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", choices=sorted(CORPORA))
    parser.add_argument("--data", required=True, help="the folder with the corpus's files")
    parser.add_argument("--tune-minutes", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each run")
    parser.add_argument("--rows", nargs="*", default=["scratch", "init_from", "label_map", "tune"])
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "your_data"))
    return parser.parse_args()


def save(corpus: str, entry: dict) -> None:
    results = {}
    if os.path.exists(RESULTS):
        with open(RESULTS, encoding="utf-8") as handle:
            results = json.load(handle)
    results[corpus] = entry
    with open(RESULTS, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(results, indent=2) + "\n")


def main() -> None:
    args = arguments()
    out_dir = os.path.join(args.out, args.corpus)
    os.makedirs(out_dir, exist_ok=True)
    done_path = os.path.join(out_dir, "rows.json")
    done = {}
    if os.path.exists(done_path):
        with open(done_path, encoding="utf-8") as handle:
            done = json.load(handle)
    configs = row_configs(args.corpus, args.data)
    measured_at = commit()
    for row in args.rows:
        if row not in done:
            done[row] = run_row(row, configs[row], out_dir, args) | {"commit": measured_at}
            with open(done_path, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(done, indent=2) + "\n")
        print(f"{args.corpus} {row}: {done[row]}", flush=True)
    meta = {key: CORPORA[args.corpus][key] for key in ("title", "source", "label_map")}
    entry = meta | {
        "date": datetime.date.today().isoformat(),
        "threads": args.threads,
        "tune_minutes": args.tune_minutes,
        "rows": done,
    }
    save(args.corpus, entry)


if __name__ == "__main__":
    main()
