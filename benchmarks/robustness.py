"""Text as people type it: the bundled models on perturbed copies of their test sets, and what
augmentation costs in training time.

    python benchmarks/robustness.py                          (make bench-robustness)
    python benchmarks/robustness.py --label after --ner runs/bundled/en-ner-augment \\
        --pos runs/bundled/en-pos-augment                    (models not yet bundled)
    python benchmarks/robustness.py --cost                   (the training-time cost only)

`--tasks ner` (or `pos`) scores one of the two, keeping the other's rows.

Scores `--ner` (default `en-ner`) on CoNLL-2003 `eng.testb` (entity F1) and `--pos` (default
`en-pos`) on UD English-EWT test (UPOS accuracy), as published and on copies with every word
lower-cased, upper-cased, title-cased, or with one typo in `--typo-rate` of the words of 4
letters or more (`crftag eval --perturb`, seeded by `--seed`), against the targets of
docs/robustness.md. The rows are kept in runs/bench/robustness.json (``--record``: the committed
`benchmarks/results/robustness.json`, benchmarks/output.py) under `--label`
(`before`: the models as bundled; `after`: the augmented models), so both stay side by side.

`--cost` times the training of the bundled NER recipe (`configs/en-ner.yaml`) on the first
`--cost-batches` batches of an epoch of `eng.train` + `eng.testa`, with and without the
augmentation of `configs/en-ner.yaml`'s pilot (docs/experiments.md), alternately, the
augmented epoch's draws included: CPU seconds of this process, one torch thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the cost is CPU seconds of one thread

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from benchmarks import output  # noqa: E402
from crftag.scoring.evaluate import headline, score_sentences  # noqa: E402
from crftag.scoring.robustness import score_perturbed  # noqa: E402
from crftag.scoring.tables import fixed_width  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")
TESTS = {
    "ner": os.path.join(DATA, "conll2003", "eng.testb"),
    "pos": os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-test.conllu"),
}
CHANGES = ("lower", "upper", "title", "typos")
TARGETS = {  # percent on the test set; docs/robustness.md
    "ner": {"as given": 91.0, "lower": 89.0, "upper": 89.0, "typos": 89.0},
    "pos": {"as given": 96.0, "lower": 95.5},
}
AUGMENT = ["augment.lower=0.25", "augment.upper=0.15", "augment.title=0.05", "augment.typos=0.2"]


def measure(task: str, model: str, seed: int, typo_rate: float) -> dict:
    """One model's scores (percent) on its test file as given and on each perturbed copy."""
    from crftag.inference.loading import load

    tagger = load(model, "cpu")
    gold = tagger.config.data.read(TESTS[task])
    scores = {"as given": headline(score_sentences(tagger, gold))}
    copies = score_perturbed(tagger, gold, CHANGES, seed=seed, typo_rate=typo_rate)
    scores |= {change: headline(copy) for change, copy in copies.items()}
    percent = {name: round(100 * value, 2) for name, value in scores.items()}
    missed = {
        name: [percent[name], target]
        for name, target in TARGETS[task].items()
        if percent[name] < target
    }
    return {
        "model": model,
        "file": os.path.relpath(TESTS[task], ROOT),
        "scores": percent,
        "targets": TARGETS[task],
        "missed": missed,
    }


def training_cost(batches: int) -> dict:
    """CPU seconds of ``batches`` training steps of the en-ner recipe, plain and augmented."""
    from crftag.config.sections import load_config
    from crftag.training.augment import epoch_changes
    from crftag.training.corpus import read_training_files
    from crftag.training.setup import start_run
    from crftag.training.step import epoch_batches, train_step, training_batch

    torch.set_num_threads(1)
    config = load_config(os.path.join(ROOT, "configs", "en-ner.yaml"), AUGMENT)
    run = start_run(
        config, read_training_files(config), device=torch.device("cpu"), show_progress=False
    )
    rows = epoch_batches(
        run.training,
        config.train.batch_size,
        run.batch_order,
        whole_documents=config.model.document_context,
    )[:batches]
    seconds = {"plain": 0.0, "augmented": 0.0}
    for epoch, kind in enumerate(["plain", "augmented"] * 2, start=1):
        started = time.process_time()
        changed = epoch_changes(run.training, config, epoch) if kind == "augmented" else {}
        for batch_rows in rows:
            batch = training_batch(
                run.training,
                batch_rows,
                document_context=True,
                singletons=run.singletons,
                word_dropout=config.train.word_dropout,
                changed=changed,
            )
            train_step(run.network, run.optimizer, batch, config.train)
        seconds[kind] += time.process_time() - started
    return {
        "recipe": "configs/en-ner.yaml",
        "augment": AUGMENT,
        "batches": len(rows),
        "sentences_per_epoch": len(run.training.sentences),
        "plain_cpu_s": round(seconds["plain"], 2),
        "augmented_cpu_s": round(seconds["augmented"], 2),
        "ratio": round(seconds["augmented"] / seconds["plain"], 3),
    }


def table(results: dict) -> str:
    headers = ["models", "task", "as given", *CHANGES]
    rows = [
        [label, task, *(f"{entry['scores'][name]:.2f}" for name in ("as given", *CHANGES))]
        for label, models in results.get("models", {}).items()
        for task, entry in models.items()
    ]
    return fixed_width(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="before", help="the key the scores are kept under")
    parser.add_argument("--ner", default="en-ner", help="a model name or run directory")
    parser.add_argument("--pos", default="en-pos", help="a model name or run directory")
    parser.add_argument("--tasks", nargs="+", choices=list(TESTS), default=list(TESTS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--typo-rate", type=float, default=0.2)
    parser.add_argument("--cost", action="store_true", help="only the training-time cost")
    parser.add_argument("--cost-batches", type=int, default=150)
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    options = parser.parse_args()
    previous = options.json or output.previous_path("robustness.json", options.record)
    options.json = options.json or output.result_path("robustness.json", options.record)
    from provenance import commit  # benchmarks/provenance.py, beside this script

    results = {}
    if os.path.exists(previous):
        with open(previous, encoding="utf-8") as stream:
            results = json.load(stream)
    stamp = {"date": datetime.date.today().isoformat(), "commit": commit()}
    if options.cost:
        results["training_cost"] = {**training_cost(options.cost_batches), **stamp}
    else:
        models = {
            task: measure(task, getattr(options, task), options.seed, options.typo_rate)
            for task in options.tasks
        }
        results.setdefault("models", {}).setdefault(options.label, {}).update(models)
        results.setdefault("stamps", {}).setdefault(options.label, {}).update(
            {
                task: {**stamp, "seed": options.seed, "typo_rate": options.typo_rate}
                for task in options.tasks
            }
        )
    results["command"] = "make bench-robustness"
    os.makedirs(os.path.dirname(options.json), exist_ok=True)
    with open(options.json, "w", encoding="utf-8") as stream:
        json.dump(results, stream, indent=2, sort_keys=True)
        stream.write("\n")
    print(table(results))
    if "training_cost" in results:
        print(json.dumps(results["training_cost"]))


if __name__ == "__main__":
    main()
