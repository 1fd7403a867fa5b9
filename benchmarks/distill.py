"""Distillation on users' own data: a student from scratch, a hard-label student and an
exact-posterior student (``crftag distill``), beside their encoder teacher.

    python benchmarks/distill.py CORPUS --data DIR --teacher RUN_DIR --text TEXT
        [--sentences N] [--per-epoch N] [--seeds 3] [--jobs J] [--rounds 5] [--threads T]
        [--out DIR] [--record]
    python benchmarks/distill.py --tiny --out DIR [--json PATH]

CORPUS is one of benchmarks/your_data.py's; the student's config is its scratch recipe
(configs/conll03.yaml on the corpus's files). The teacher is the corpus's ``encoder`` row of
benchmarks/your_data.py (all-MiniLM-L6-v2 beside GloVe; its run directory, by default
runs/your_data/CORPUS/encoder), the text the corpus's domain text from
benchmarks/char_lm_text.py (already shuffled; the first N lines are taken, 50,000 by default).
The rows, each a normal ``crftag`` command:

    scratch   crftag train CONFIG, one run per seed
    hard      crftag distill TEACHER CONFIG --text TEXT --set distill.objective=hard, per seed
    exact     the same with distill.objective=exact
    teacher   the teacher's own dev and test F1 (its metrics.json)

The teacher labels the text once, timed (the labelling's seconds, sentences/s and tokens/s), into
OUT/CORPUS/store, which every student run reads (its run directory's ``teacher`` folder is a
link to it). A store labelled in parts, or any store with ``--retime-labelling`` (one labelled
beside other work), has its text's first 2,000 lines labelled again apart and timed instead.
Then the test file is tagged by the teacher, the first exact student and the first hard student
in turn, ``--rounds`` times each, alternating so that all three meet the same load; each
model's best round's tokens/s and the students' speed over the teacher's are kept.
The first students are also exported for the NumPy runtime (``crftag export --format numpy``)
and tagged in the same rounds, with the share of tokens they tag as their torch form does.

Each epoch of a distilled student runs the labelled sentences and ``--per-epoch`` of the teacher's
sentences (``distill.sentences``, drawn afresh each epoch; 6,000 by default, about the BTC's
training set, so that a run takes half an hour on 2 cores rather than hours: over an epoch
budget of 50 a student still meets the whole store several times). ``--jobs`` runs that many
student runs at once, in the benchmark's order (seed by seed), each with ``--threads`` threads.

Each run directory is kept under OUT/CORPUS; a rerun skips the runs finished and resumes the
stopped ones (and an interrupted labelling), so the benchmark continues where it stopped.
Writes runs/bench/distill.json (with ``--record``, benchmarks/results/distill.json:
benchmarks/output.py), one entry per corpus, and prints the rows. ``--tiny`` runs the whole path
in minutes on the bundled NER sample (a teacher of one epoch trained here, 2 seeds, 200 lines
of the UD EWT sample's text): the end-to-end test of this script.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
from provenance import commit  # noqa: E402
from your_data import CORPORA, recipe_config  # noqa: E402

CRFTAG = [sys.executable, "-m", "crftag"]
OBJECTIVES = ("hard", "exact")
STORE = "store"
RATE_LINES = 2_000  # lines the labelling is timed on when the store was labelled in parts
# The tiny path: the sample with the tests' tiny model (tests/conftest.py), one or two epochs.
TINY_SETTINGS = {"model": {"hidden_size": 32, "word_dim": 32}, "train": {"epochs": 2}}


def student_config(args) -> dict:
    """The student's config as a dict: the corpus's scratch recipe, or the tiny sample's."""
    if not args.tiny:
        return recipe_config(args.corpus, args.data)
    with open(os.path.join(ROOT, "configs", "sample.yaml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    for key in ("train", "dev", "test"):
        config["data"][key] = os.path.join(ROOT, "data", f"ner_sample.{key}.conll")
    for section, values in TINY_SETTINGS.items():
        config[section] |= values
    return config


def crftag(argv: list[str], log_path: str, threads: int) -> None:
    """Run ``crftag ARGV``, its output appended to ``log_path``."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with open(log_path, "a", encoding="utf-8") as log:
        subprocess.run(CRFTAG + argv, check=True, cwd=ROOT, env=env, stdout=log, stderr=log)


def tiny_inputs(out_dir: str, config_path: str, threads: int) -> tuple[str, str]:
    """(a teacher trained on the sample for one epoch, 200 lines of web text), made once."""
    teacher = os.path.join(out_dir, "teacher")
    if not os.path.exists(os.path.join(teacher, "metrics.json")):
        argv = ["train", config_path, "-o", teacher, "--overwrite", "--set", "train.epochs=1"]
        crftag([*argv, "--device", "cpu", "-q"], os.path.join(out_dir, "teacher.log"), threads)
    text = os.path.join(out_dir, "text.txt")
    with open(os.path.join(ROOT, "data", "ewt_sample.train.conllu"), encoding="utf-8") as handle:
        lines = [line[len("# text = ") :] for line in handle if line.startswith("# text = ")]
    with open(text, "w", encoding="utf-8") as handle:
        handle.writelines(lines[:200])
    return teacher, text


def first_lines(path: str, count: int, out_path: str) -> str:
    """The first ``count`` lines of ``path`` written to ``out_path`` (once); its path."""
    if not os.path.exists(out_path):
        with open(path, encoding="utf-8") as source, open(out_path, "w", encoding="utf-8") as out:
            for number, line in enumerate(source):
                if number == count:
                    break
                out.write(line)
    return out_path


def label_once(teacher: str, text: str, config: dict, store_dir: str) -> dict | None:
    """Label ``text`` with ``teacher`` into ``store_dir`` as ``crftag distill`` does (the
    config's dev and test sentences removed); the labelling's time and rates when it ran whole
    here, None when the store was already there (or partly: its time is not one run's)."""
    from crftag.config.sections import Config
    from crftag.inference.teacher import load_teacher
    from crftag.inference.teacher_store import label_text

    fresh = not os.path.exists(store_dir)
    data = Config.from_dict(config).data
    exclude = {tuple(s.tokens) for path in (data.dev, data.test) for s in data.read(path)}
    started = time.perf_counter()
    store = label_text(load_teacher(teacher), [text], store_dir, exclude=exclude)
    seconds = time.perf_counter() - started
    if not fresh:
        return None
    tokens = sum(len(store.sentence(i)) for i in range(len(store)))
    return {
        "sentences": len(store),
        "removed": store.removed,
        "seconds": round(seconds, 1),
        "sentences_per_second": round(len(store) / seconds, 1),
        "tokens_per_second": round(tokens / seconds),
        "load_average": round(os.getloadavg()[0], 1),
    }


def needs_timing(labelling: dict | None, retime: bool) -> bool:
    """Whether the labelling is timed apart on the text's first lines: when asked (``retime``:
    the store was labelled beside other work, so its own rate is not a speed), or when the store
    was not labelled in one run here (its time is no one run's)."""
    whole = labelling or {}
    return retime or (not whole.get("sentences_per_second") and "timed" not in whole)


def labelling_rate(teacher: str, text: str, config: dict, out_dir: str, lines: int) -> dict:
    """The labelling's rates timed on the text's first ``lines`` lines, labelled afresh into a
    folder removed after, when the store itself was labelled in parts (or elsewhere)."""
    import shutil

    folder = os.path.join(out_dir, "rate")
    shutil.rmtree(folder, ignore_errors=True)
    part = first_lines(text, lines, os.path.join(out_dir, f"rate-{lines}.txt"))
    try:
        found = label_once(teacher, part, config, os.path.join(folder, "store"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return found | {"measured_on": f"the text's first {lines:,} lines, labelled again"}


def student_run(row: str, seed: int, args, paths: dict) -> dict:
    """One row's run of ``seed``: trained (or resumed) unless finished; its dev and test F1."""
    run_dir = os.path.join(paths["out"], f"{row}-{seed}")
    log = os.path.join(paths["out"], f"{row}-{seed}.log")
    options = ["--seed", str(seed), "--device", "cpu", "-q"]
    if os.path.exists(os.path.join(run_dir, "resume.pt")):
        crftag(["train", "--resume", run_dir, "--device", "cpu", "-q"], log, args.threads)
    elif not os.path.exists(os.path.join(run_dir, "metrics.json")):
        if row == "scratch":
            argv = ["train", paths["config"], "-o", run_dir, "--overwrite"]
            crftag([*argv, *options], log, args.threads)
        else:
            os.makedirs(run_dir, exist_ok=True)
            link = os.path.join(run_dir, "teacher")
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(paths["store"]), link)
            argv = ["distill", paths["teacher"], paths["config"], "--text", paths["text"]]
            argv += ["-o", run_dir, "--overwrite", "--set", f"distill.objective={row}"]
            if args.per_epoch:
                argv += ["--set", f"distill.sentences={args.per_epoch}"]
            crftag([*argv, *options], log, args.threads)
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    return {
        "seed": seed,
        "dev_f1": round(100 * metrics["dev"], 2),
        "test_f1": round(100 * metrics["test"], 2),
        # The epochs' own time from metrics.json: a resumed run's wall time here is only its rest.
        "minutes": round(metrics["train_seconds"] / 60, 1),
        "minutes_of": "training epochs",
    }


def train_rows(args, paths: dict, done: dict, keep, measured_at: str) -> None:
    """Every row's runs not yet in ``done``, ``args.jobs`` at a time, in seed-major order (each
    seed's three rows together, so that a benchmark stopped part way already compares the rows
    on the seeds it finished); each finished run is kept as it ends."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    pending = [
        (row, seed)
        for seed in range(1, 1 + args.seeds)
        for row in ("scratch", *OBJECTIVES)
        if not any(run["seed"] == seed for run in done["rows"].setdefault(row, []))
    ]
    # Threads suffice: each run is a crftag process of its own, the thread only waits for it.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(student_run, row, seed, args, paths): row for row, seed in pending}
        for future in as_completed(futures):
            row = futures[future]
            run = future.result() | {"commit": measured_at}
            done["rows"][row] = sorted([*done["rows"][row], run], key=lambda kept: kept["seed"])
            keep()
            print(f"{args.corpus} {row}: {run}", flush=True)


def npz_exports(models: dict[str, str], out_dir: str, threads: int) -> dict[str, str]:
    """Each student exported for the NumPy runtime (``crftag export --format numpy``, once):
    name -> the .npz path, named ``NAME npz``."""
    exports = {}
    for name, run_dir in models.items():
        path = os.path.join(out_dir, f"{name}-1.npz")
        if not os.path.exists(path):
            argv = ["export", run_dir, path, "--format", "numpy"]
            crftag(argv, os.path.join(out_dir, "export.log"), threads)
        exports[f"{name} npz"] = path
    return exports


def tagging_speeds(models: dict[str, str], test_path: str, rounds: int) -> dict:
    """Each model's tokens/s tagging the test file's sentences on the CPU, best of ``rounds``
    rounds, the models taking turns within each round (one run, the same load for all); and
    the share of tokens each ``NAME npz`` export tags as the torch model ``NAME`` does."""
    import crftag
    from crftag.data.labelled import read_labelled

    sentences = [s.tokens for s in read_labelled(test_path, "auto", None, None, "error")]
    tokens = sum(len(s) for s in sentences)
    taggers = {name: crftag.load(path, device="cpu") for name, path in models.items()}
    best = dict.fromkeys(models, 0.0)
    tags = {}
    for _ in range(rounds):
        for name, tagger in taggers.items():
            started = time.perf_counter()
            tags[name] = tagger.tag(sentences)
            best[name] = max(best[name], tokens / (time.perf_counter() - started))
    teacher = best["teacher"]
    same = {
        name: sum(a == b for x, y in zip(found, tags[name[: -len(" npz")]], strict=True)
                  for a, b in zip(x, y, strict=True)) / tokens
        for name, found in tags.items() if name.endswith(" npz")
    }  # fmt: skip
    return {
        "tokens_per_second": {name: round(speed) for name, speed in best.items()},
        "npz_tags_as_torch": {name: round(share, 4) for name, share in same.items()},
        "over_teacher": {
            name: round(speed / teacher, 2) for name, speed in best.items() if name != "teacher"
        },
        "measured": f"{rounds} rounds of the test file's {tokens} tokens, models in turn, "
        f"torch threads {os.environ.get('OMP_NUM_THREADS', 'default')}, load average "
        f"{os.getloadavg()[0]:.1f}, {datetime.date.today().isoformat()}",
    }


def table(entry: dict) -> str:
    """One corpus's rows as docs/distillation.md quotes them: a markdown table of each row's
    mean dev and test F1 over its seeds (their spread), the teacher's, and tagging speeds."""
    lines = [
        "| row | dev F1: mean (max - min) | test F1: mean (max - min) | seeds "
        "| tokens/s (over the teacher) |",
        "|---|---:|---:|---:|---:|",
    ]
    speed = entry["speed"]["tokens_per_second"]
    for row in ("scratch", *OBJECTIVES):
        found = entry["rows"][row]
        tagging = (
            f"{speed[row]:,} ({entry['speed']['over_teacher'][row]:.1f}x)" if row in speed else ""
        )
        lines.append(
            f"| {row} | {found['dev_f1']:.2f} ({found['dev_f1_spread']:.2f}) "
            f"| {found['test_f1']:.2f} ({found['test_f1_spread']:.2f}) "
            f"| {len(found['runs'])} | {tagging} |"
        )
    for name, share in entry["speed"].get("npz_tags_as_torch", {}).items():
        row = name[: -len(" npz")]
        lines.append(
            f"| {row}, seed 1, as `.npz` | tags as torch: {100 * share:.2f}% of tokens | | "
            f"| {speed[name]:,} ({entry['speed']['over_teacher'][name]:.1f}x) |"
        )
    teacher = entry["teacher"]
    lines.append(
        f"| teacher | {teacher['dev_f1']:.2f} | {teacher['test_f1']:.2f} | 1 "
        f"| {speed['teacher']:,} (1.0x) |"
    )
    return "\n".join(lines)


def summary(runs: list[dict]) -> dict:
    """The mean and spread of a row's seeds."""
    found = {}
    for key in ("dev_f1", "test_f1"):
        values = [run[key] for run in runs]
        found[key] = round(statistics.mean(values), 2)
        found[f"{key}_spread"] = round(max(values) - min(values), 2)
    return found


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", choices=sorted(CORPORA))
    parser.add_argument("--data", help="the folder with the corpus's files")
    parser.add_argument("--teacher", help="default: runs/your_data/CORPUS/encoder")
    parser.add_argument("--text", help="the corpus's domain text (benchmarks/char_lm_text.py)")
    parser.add_argument("--sentences", type=int, default=50_000, help="lines of the text taken")
    parser.add_argument(
        "--per-epoch", type=int, default=6_000, help="teacher sentences an epoch (0: all)"
    )
    parser.add_argument("--seeds", type=int, default=3, help="runs of each student row")
    parser.add_argument("--jobs", type=int, default=1, help="student runs at once")
    parser.add_argument("--rounds", type=int, default=5, help="tagging rounds of each model")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each run")
    parser.add_argument("--tiny", action="store_true", help="the bundled sample, in minutes")
    parser.add_argument(
        "--retime-labelling",
        action="store_true",
        help="time the labelling again on the text's first 2,000 lines (a store labelled beside "
        "other work), replacing an earlier timing",
    )
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "distill"))
    parser.add_argument("--json", help="write the results here (default: benchmarks/output.py)")
    output.add_record_option(parser)
    args = parser.parse_args()
    if args.tiny:
        args.corpus, args.seeds, args.rounds = "sample", min(args.seeds, 2), min(args.rounds, 2)
    elif args.corpus is None or args.data is None or args.text is None:
        parser.error("give CORPUS, --data and --text (or --tiny)")
    return args


def main() -> None:
    args = arguments()
    out_dir = os.path.join(args.out, args.corpus)
    os.makedirs(out_dir, exist_ok=True)
    config_path = os.path.join(out_dir, "config.yaml")
    config = student_config(args)
    with open(config_path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    if args.tiny:
        teacher, text = tiny_inputs(out_dir, config_path, args.threads)
    else:
        teacher = args.teacher or os.path.join(ROOT, "runs", "your_data", args.corpus, "encoder")
        text = first_lines(args.text, args.sentences, os.path.join(out_dir, "text.txt"))
    paths = {"out": out_dir, "config": config_path, "teacher": teacher, "text": text}
    paths["store"] = os.path.join(out_dir, STORE)
    done_path = os.path.join(out_dir, "rows.json")
    done = {"rows": {}}
    if os.path.exists(done_path):
        with open(done_path, encoding="utf-8") as handle:
            done = json.load(handle)
    measured_at = commit()

    def keep() -> None:
        with open(done_path, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(done, indent=2) + "\n")

    labelling = label_once(teacher, text, config, paths["store"])
    if labelling is not None or "labelling" not in done:
        done["labelling"] = labelling
    keep()
    train_rows(args, paths, done, keep, measured_at)
    if needs_timing(done["labelling"], args.retime_labelling):
        timed = labelling_rate(teacher, text, config, out_dir, RATE_LINES)
        done["labelling"] = (done["labelling"] or {}) | {"timed": timed}
        keep()
    with open(os.path.join(teacher, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    done["teacher"] = {
        "run": os.path.relpath(teacher, ROOT) if teacher.startswith(ROOT + os.sep) else teacher,
        "dev_f1": round(100 * metrics["dev"], 2),
        "test_f1": round(100 * metrics["test"], 2),
    }
    students = {row: os.path.join(out_dir, f"{row}-1") for row in OBJECTIVES}
    models = {"teacher": teacher} | students | npz_exports(students, out_dir, args.threads)
    done["speed"] = tagging_speeds(models, config["data"]["test"], args.rounds)
    keep()
    entry = {
        "date": datetime.date.today().isoformat(),
        "text_lines": args.sentences if not args.tiny else 200,
        "seeds": args.seeds,
        "teacher_sentences_per_epoch": args.per_epoch or "all",
        "jobs": args.jobs,
        "teacher": done["teacher"],
        "labelling": done["labelling"],
        "rows": {
            row: summary(done["rows"][row]) | {"runs": done["rows"][row]} for row in done["rows"]
        },
        "speed": done["speed"],
    }
    output.merge_entries("distill.json", {args.corpus: entry}, args.record, args.json)
    print(json.dumps(entry, indent=2))


if __name__ == "__main__":
    main()
