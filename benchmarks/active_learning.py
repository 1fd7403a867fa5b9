"""Active learning on CoNLL-2003, simulated: an annotator who reveals the gold tags of the
sentences a strategy selects.

    python benchmarks/active_learning.py [--quick] [--rounds R] [--round-tokens T] [--epochs E]
        [--pool-fraction F] [--seed S] [--strategies ...] [--full-reference] [--record] [--out DIR]

The pool is eng.train (or a seeded fraction of it). Every strategy starts from the same seeded
sentences, 1% of eng.train's; each round trains a model from scratch on the labelled set
(configs/conll03.yaml without document context, ``train.epochs=E``, seed S: the same budget for
every strategy and round), scores dev (eng.testa) F1, and asks the strategy for sentences of
the rest of the pool (:func:`crftag.inference.selection.unit_score` on the tagger's
predictions, what ``crftag select`` ranks by) until T more tokens are labelled. The last
round's model is scored once on test (eng.testb). With ``--full-reference`` a model is also
trained on the whole pool with the same recipe, for the "99% of full-data F1" target.

Writes active_learning.json and active_learning.png (dev F1 against labelled tokens) into
runs/bench/ (with ``--record``, benchmarks/results/: benchmarks/output.py) and prints a table;
finished strategies are kept as they end, so an interrupted run resumes where it stopped.
``--quick`` is a minutes-long setting that shows the machinery working, not a result.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
import torch  # noqa: E402
from provenance import commit  # noqa: E402  (benchmarks/provenance.py, beside this script)

from crftag.config.sections import load_config  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.inference.selection import STRATEGIES, prediction_options, unit_score  # noqa: E402
from crftag.scoring.evaluate import headline, score_sentences  # noqa: E402
from crftag.training.run import train_in_memory  # noqa: E402

CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")
CONFIG = os.path.join(ROOT, "configs", "conll03.yaml")
QUICK = {
    "rounds": 4,
    "round_tokens": 2000,
    "epochs": 5,
    "pool_fraction": 0.2,
    "dev_sentences": 600,
    "hidden_size": 50,
}
# The quick setting's lighter recipe: no pretrained vectors to read each round, a character CNN,
# and Adam, which learns something from 2,000 tokens in 3 epochs.
QUICK_RECIPE = [
    "model.embeddings=null",
    "model.char_encoder=cnn",
    "train.optimizer=adam",
    "train.lr=0.005",
    "train.loss_reduction=mean",
    "train.batch_size=4",
    "train.fast_encoder=false",
]
FULL = {
    "rounds": 12,
    "round_tokens": 5500,  # 12 rounds reach 33.5% of eng.train: the 35% target is in view
    "epochs": 8,
    "pool_fraction": 1.0,
    "dev_sentences": 0,
    "hidden_size": 100,
}


def read(name: str) -> list:
    return read_corpus(os.path.join(CONLL, name), ColumnSpec("conll", 0, -1))


def recipe(args: argparse.Namespace):
    overrides = [
        "model.document_context=false",
        f"model.hidden_size={args.hidden_size}",
        f"train.epochs={args.epochs}",
        f"train.patience={args.epochs}",
        f"train.seed={args.seed}",
        *(QUICK_RECIPE if args.quick else []),
    ]
    return load_config(CONFIG, overrides), overrides


def tokens_of(sentences: list) -> int:
    return sum(len(sentence.tokens) for sentence in sentences)


def choose(tagger, pool: list, strategy: str, budget: int, seed: int, round_number: int) -> list:
    """Indices into ``pool`` of the best sentences under ``strategy`` adding up to ``budget``
    tokens (the last one may pass it)."""
    predictions = tagger.predict([list(s.tokens) for s in pool], **prediction_options(strategy))
    scores = [
        unit_score(strategy, [p], normalize=True, key=f"{round_number}:{i}", seed=seed)
        for i, p in enumerate(predictions)
    ]
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    chosen, total = [], 0
    for index in order:
        if total >= budget:
            break
        chosen.append(index)
        total += len(pool[index].tokens)
    return chosen


def run_strategy(strategy: str, seed_set: list, pool: list, dev: list, args) -> dict:
    labelled, rest = list(seed_set), list(pool)
    config, _ = recipe(args)
    rounds = []
    for round_number in range(args.rounds + 1):
        started = time.perf_counter()
        tagger, _ = train_in_memory(config, labelled, dev)
        dev_f1 = headline(score_sentences(tagger, dev))
        rounds.append(
            {
                "round": round_number,
                "sentences": len(labelled),
                "tokens": tokens_of(labelled),
                "dev_f1": round(100 * dev_f1, 2),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        print(f"{strategy} {rounds[-1]}", file=sys.stderr, flush=True)
        if round_number == args.rounds:
            break
        picked = set(choose(tagger, rest, strategy, args.round_tokens, args.seed, round_number))
        labelled += [rest[i] for i in sorted(picked)]
        rest = [sentence for i, sentence in enumerate(rest) if i not in picked]
    test_f1 = headline(score_sentences(tagger, read("eng.testb")))
    return {"rounds": rounds, "test_f1": round(100 * test_f1, 2)}


def targets(curves: dict, full_f1: float | None, pool_tokens: int) -> dict:
    """The benchmark's two targets, from the measured curves."""
    random_final = curves["random"]["rounds"][-1]
    found: dict = {"random_final_dev_f1": random_final["dev_f1"]}
    for name, curve in curves.items():
        if name == "random":
            continue
        reached = [r for r in curve["rounds"] if r["dev_f1"] >= random_final["dev_f1"]]
        found[name] = {
            "tokens_to_random_final": reached[0]["tokens"] if reached else None,
            "share_of_random_tokens": (
                round(reached[0]["tokens"] / random_final["tokens"], 3) if reached else None
            ),
        }
        if full_f1 is not None:
            near = [r for r in curve["rounds"] if r["dev_f1"] >= 0.99 * full_f1]
            found[name]["share_of_pool_tokens_to_99pct_full"] = (
                round(near[0]["tokens"] / pool_tokens, 3) if near else None
            )
    return found


def draw(curves: dict, full_f1: float | None, path: str, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.0, 4.6), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for name, curve in curves.items():
        xs = [r["tokens"] for r in curve["rounds"]]
        ys = [r["dev_f1"] for r in curve["rounds"]]
        axes.plot(xs, ys, marker="o", linestyle="--" if name == "random" else "-", label=name)
    if full_f1 is not None:
        axes.axhline(full_f1, color="grey", linewidth=0.8, label="full pool")
    axes.set_xlabel("labelled tokens")
    axes.set_ylabel("dev F1 (eng.testa)")
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)


def table(curves: dict) -> str:
    names = list(curves)
    rounds = len(curves[names[0]]["rounds"])
    lines = ["| round | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for number in range(rounds):
        cells = [
            f"{row['dev_f1']:.2f} ({row['tokens']:,})"
            for row in (curves[n]["rounds"][number] for n in names)
        ]
        lines.append(f"| {number} | " + " | ".join(cells) + " |")
    lines.append(
        "| test F1 (last round) | "
        + " | ".join(f"{curves[n]['test_f1']:.2f}" for n in names)
        + " |"
    )
    return "\n".join(lines)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="minutes: a smoke run, no result")
    for name, default in FULL.items():
        kind = float if isinstance(default, float) else int
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--strategies", nargs="*", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--full-reference", action="store_true")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (more than the free cores thrash)"
    )
    parser.add_argument("--out", help="folder to write into (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args()
    args.out = args.out or output.results_dir(args.record)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if "random" not in args.strategies:
        args.strategies.append("random")
    return args


def run_strategies(seed_set: list, rest: list, dev: list, args) -> dict:
    """Every strategy's curve. Each finished curve is kept in runs/active_learning/partial.json
    with the setting it ran under, so that a rerun with the same setting resumes after it."""
    path = os.path.join(ROOT, "runs", "active_learning", "partial.json")
    setting = {k: getattr(args, k) for k in FULL} | {"seed": args.seed, "quick": args.quick}
    curves: dict = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            kept = json.load(handle)
        if kept["setting"] == setting:
            curves = {s: c for s, c in kept["curves"].items() if s in args.strategies}
    for strategy in args.strategies:
        if strategy not in curves:
            curves[strategy] = run_strategy(strategy, seed_set, rest, dev, args)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"setting": setting, "curves": curves}, handle, indent=2)
    return {s: curves[s] for s in args.strategies}


def main() -> None:
    args = arguments()
    torch.set_num_threads(args.threads)
    measured_at = commit()  # the code that runs: taken before, as commits may follow meanwhile
    started = time.perf_counter()
    train = read("eng.train")
    rng = random.Random(args.seed)
    pool = rng.sample(train, round(len(train) * args.pool_fraction))
    dev = read("eng.testa")
    if args.dev_sentences:
        dev = dev[: args.dev_sentences]
    seed_size = round(0.01 * len(train))  # 1% of eng.train, whatever the pool's size
    seed_set, rest = pool[:seed_size], pool[seed_size:]
    curves = run_strategies(seed_set, rest, dev, args)
    full_f1 = None
    if args.full_reference:
        tagger, _ = train_in_memory(recipe(args)[0], pool, dev)
        full_f1 = round(100 * headline(score_sentences(tagger, dev)), 2)
    setting = {k: getattr(args, k) for k in FULL} | {"seed": args.seed, "quick": args.quick}
    result = {
        "date": datetime.date.today().isoformat(),
        "commit": measured_at,
        "command": "python benchmarks/active_learning.py " + " ".join(sys.argv[1:]),
        "recipe": "configs/conll03.yaml --set " + " --set ".join(recipe(args)[1]),
        "setting": setting,
        "pool": {"sentences": len(pool), "tokens": tokens_of(pool), "seed_sentences": seed_size},
        "dev_sentences": len(dev),
        "full_pool_dev_f1": full_f1,
        "curves": curves,
        "targets": targets(curves, full_f1, tokens_of(pool)),
        "minutes": round((time.perf_counter() - started) / 60, 1),
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "active_learning.json"), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(result, indent=2) + "\n")
    kind = "quick setting" if args.quick else "full setting"
    title = f"Active learning on CoNLL-2003 ({kind}, {result['date']}, {result['commit']})"
    draw(curves, full_f1, os.path.join(args.out, "active_learning.png"), title)
    print(table(curves))
    print(json.dumps(result["targets"], indent=2))


if __name__ == "__main__":
    main()
