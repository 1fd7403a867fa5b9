"""Partial labels on CoNLL-2003: half the entity annotations of eng.train removed, read as O or as
unknown, against the full data.

    python benchmarks/partial_labels.py [--epochs N] [--seed S] [--fraction F] [--out DIR]
        [--record]

A seeded random ``fraction`` of the entities of eng.train (spans by conlleval's rules) lose their
annotation. Three models are trained with one recipe (configs/conll03.yaml with
``train.epochs=N``, seed S): (a) the removed entities' tokens tagged ``O``, the usual way missing
annotations end up in data; (b) the same tokens tagged ``?``, unknown, so training sums over every
tag they could take (docs/partial-labels.md); (c) the full eng.train. Writes
runs/bench/partial_labels.json (--record: benchmarks/results/, benchmarks/output.py) with the
dev (eng.testa) and test (eng.testb) F1 of each (best-on-dev epoch), and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.data.schemes import to_spans  # noqa: E402

CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")
CONFIG = os.path.join(ROOT, "configs", "conll03.yaml")
VARIANTS = {
    "a_removed_as_O": "the removed entities' tokens tagged O",
    "b_removed_unknown": "the removed entities' tokens unknown (?)",
    "c_full": "the full eng.train",
}


def remove_entities(path: str, fraction: float, seed: int) -> tuple[dict, dict[str, str]]:
    """(entity counts, {variant: file text}): ``path`` with a seeded ``fraction`` of its entities
    removed, their tokens' tags ``O`` in (a) and ``?`` in (b); documents kept for the model's
    document context."""
    sentences = read_corpus(path, ColumnSpec(format="conll", word_column=0, tag_column=-1))
    rng = random.Random(seed)
    removed = total = 0
    texts = {"a_removed_as_O": [], "b_removed_unknown": []}
    document = 0
    for sentence in sentences:
        if sentence.document != document:
            document = sentence.document
            for blocks in texts.values():
                blocks.append("-DOCSTART- O\n")
        as_o, unknown = list(sentence.tags), list(sentence.tags)
        for span in to_spans(sentence.tags):
            total += 1
            if rng.random() < fraction:
                removed += 1
                for position in range(span.start, span.end):
                    as_o[position], unknown[position] = "O", "?"
        for name, tags in (("a_removed_as_O", as_o), ("b_removed_unknown", unknown)):
            lines = [f"{token} {tag}" for token, tag in zip(sentence.tokens, tags, strict=True)]
            texts[name].append("\n".join(lines) + "\n")
    summary = {"entities": total, "removed": removed}
    return summary, {name: "\n".join(blocks) for name, blocks in texts.items()}


def train(name: str, train_path: str, out: str, epochs: int, seed: int) -> dict:
    run_dir = os.path.join(out, name)
    command = [
        sys.executable, "-m", "crftag", "train", CONFIG, "-o", run_dir, "--seed", str(seed),
        "--set", f"data.train={os.path.abspath(train_path)}", "--set", f"train.epochs={epochs}",
        "--device", "cpu", "-q",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT)
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    return {
        "what": VARIANTS[name],
        "dev_f1": metrics["dev"],
        "test_f1": metrics["test"],
        "seconds": round(time.perf_counter() - started, 1),
    }


def commit() -> str:
    result = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    return result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fraction", type=float, default=0.5)
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "partial_labels"))
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS), default=list(VARIANTS))
    output.add_record_option(parser)
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    summary, texts = remove_entities(os.path.join(CONLL, "eng.train"), args.fraction, args.seed)
    paths = {"c_full": os.path.join(CONLL, "eng.train")}
    for name, text in texts.items():
        paths[name] = os.path.join(args.out, f"{name}.train")
        with open(paths[name], "w", encoding="utf-8") as handle:
            handle.write(text)
    rows = {}
    for name in args.only:
        print(f"training {name}: {VARIANTS[name]}", file=sys.stderr)
        rows[name] = train(name, paths[name], args.out, args.epochs, args.seed)
        write_result(args, summary, rows)  # after each variant: a cut-short run keeps its rows
    print(json.dumps(write_result(args, summary, rows), indent=2))


def write_result(args: argparse.Namespace, summary: dict, rows: dict) -> dict:
    result = {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "recipe": (
            f"configs/conll03.yaml --seed {args.seed} --set train.epochs={args.epochs} "
            "--device cpu (best-on-dev epoch; dev eng.testa, test eng.testb)"
        ),
        "removal": {**summary, "fraction": args.fraction, "seed": args.seed},
        "command": (
            f"python benchmarks/partial_labels.py --epochs {args.epochs} --seed {args.seed} "
            f"--fraction {args.fraction}"
        ),
        "variants": {name: rows[name] for name in VARIANTS if name in rows},
    }
    with open(output.result_path("partial_labels.json", args.record), "w", encoding="utf-8") as f:
        f.write(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
