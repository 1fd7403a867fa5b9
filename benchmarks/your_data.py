"""Your own data: the CoNLL-2003 recipe, ``init_from: en-ner`` with and without a label map, and
``crftag tune``, on NER corpora from outside news.

    python benchmarks/your_data.py CORPUS --data DIR [--tune-minutes M] [--threads T] [--out DIR]
        [--char-lm LM_DIR] [--vectors VECTORS] [--transformer ENCODER [--finetune]]
    python benchmarks/your_data.py CORPUS --data DIR --from-run ROW=RUN_DIR --commit C

CORPUS is one of :data:`CORPORA`; DIR holds its three files, taken from the public repository
named beside it (``benchmarks/your_data_corpora.py`` copies them there from a clone; ``make
bench-your-data`` runs both). The rows, each a normal ``crftag`` command, its wall time measured
around it:

    scratch      configs/conll03.yaml with the data paths changed (and tag_scheme iob2)
    init_from    the same recipe with ``train.init_from: en-ner`` and no ``model`` section:
                 the architecture is en-ner's
    label_map    the same, with the corpus's ``train.label_map`` and ``train.drop_old_labels``
    tune         ``crftag tune`` of the scratch config for M minutes, its best trial's test F1
    dictionaries the scratch config with ``model.lexicons``, the corpus's dictionary files in DIR
                 (a corpus with a dictionary only: BC5CDR)
    vectors      the scratch config with ``model.embeddings: [GloVe, VECTORS]``, the recipe's
                 GloVe file and a vector file of the corpus's domain side by side (only with
                 ``--vectors``; ``benchmarks/domain_vectors.py`` makes one)
    char_lm      the scratch config with ``model.char_lm: LM_DIR``, language models from
                 ``crftag pretrain`` (only with ``--char-lm``; ``benchmarks/char_lm_text.py``
                 makes the text)
    all          the scratch config with every one of those three the corpus has and the run
                 was given, when that is more than one
    encoder      the scratch config with ``model.transformer: ENCODER`` frozen, the mean of its
                 last 4 layers and of each word's subwords, beside GloVe (only with
                 ``--transformer``: a Hugging Face model folder)
    encoder_only the same without GloVe: word embeddings of the recipe's size trained from
                 scratch, no vector words added
    encoder_finetuned  the encoder row with the encoder trained too, for at most 8 epochs (only
                 with ``--finetune``)

``conll03`` (DIR: ../shared/data/conll2003) is the recipe's own corpus, for "no worse": its
scratch row is configs/conll03.yaml as it is, and it has the resource rows only (en-ner was
trained on it, and the recipe tuned on it).

Each row's run directory is kept under OUT/CORPUS; a rerun skips the rows already done (and
continues the tuning study), so an interrupted benchmark resumes. ``--from-run ROW=RUN_DIR``
takes a row from a finished ``crftag train`` run instead of training (only the recorded rows,
unless ``--rows`` names others): its checkpoint's config must be the row's (file paths compared
by name only) and its dictionary entries the files', its minutes are its epochs' time, and
``--commit`` names the commit whose code trained it. Each row but ``tune`` also carries
its training tokens/s (metrics.json) and its tagging tokens/s (``crftag eval`` of the test
file, timed whole, the load average beside it). Writes runs/bench/your_data.json (with
``--record``, benchmarks/results/your_data.json: benchmarks/output.py), one entry per corpus
(the rows of this run replace theirs, the others are kept), and prints the rows.
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

from crftag.config.sections import Config
from crftag.data.lexicons import read_lexicons
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import read_checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import output  # noqa: E402  (benchmarks/output.py, beside this script)

RECIPE = os.path.join(ROOT, "configs", "conll03.yaml")
CRFTAG = [sys.executable, "-m", "crftag"]

CORPORA = {
    "btc": {
        "title": "Broad Twitter Corpus (tweets; PER, LOC, ORG)",
        "source": "github.com/GateNLP/broad_twitter_corpus 0c45ef7, train_dev_test_conll/btc.*",
        "files": ("train.conll", "dev.conll", "test.conll"),
        # Its labels are en-ner's own, so there is nothing to map; the row drops MISC.
        "label_map": None,
        "lexicons": None,
    },
    "bc5cdr": {
        "title": "BC5CDR (PubMed abstracts; Chemical, Disease)",
        "source": "github.com/cambridgeltl/MTL-Bioinformatics-2016 df0df02, data/BC5CDR-IOB",
        "files": ("train.tsv", "devel.tsv", "test.tsv"),
        "label_map": {"Chemical": "MISC", "Disease": "MISC"},
        # AutoNER's dict_core.txt split by type (benchmarks/your_data_corpora.py).
        "lexicons": {"Chemical": "chemicals.txt", "Disease": "diseases.txt"},
        "dictionary": "github.com/shangjingbo1226/AutoNER 75f8d09, data/BC5CDR/dict_core.txt",
    },
    # The recipe's own corpus, for "no worse": the resource rows beside scratch. en-ner was
    # trained on it, so the warm-start rows and tune (the recipe was tuned on it) are left out.
    "conll03": {
        "title": "CoNLL-2003 English (Reuters news; PER, LOC, ORG, MISC)",
        "source": "../shared/data/conll2003 (eng.train, eng.testa, eng.testb)",
        "files": ("eng.train", "eng.testa", "eng.testb"),
        "tag_scheme": "iob1",
        "warm_rows": False,
        "label_map": None,
        "lexicons": None,
    },
}


def recipe_config(corpus: str, data_dir: str) -> dict:
    """configs/conll03.yaml as a dict, read from the corpus's files (absolute paths)."""
    with open(RECIPE, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    train, dev, test = (
        os.path.abspath(os.path.join(data_dir, f)) for f in CORPORA[corpus]["files"]
    )
    tag_scheme = CORPORA[corpus].get("tag_scheme", "iob2")
    config["data"].update(train=train, dev=dev, test=test, tag_scheme=tag_scheme)
    embeddings = config["model"]["embeddings"]
    config["model"]["embeddings"] = os.path.normpath(
        os.path.join(os.path.dirname(RECIPE), embeddings)
    )
    return config


def row_configs(
    corpus: str,
    data_dir: str,
    char_lm: str | None = None,
    vectors: str | None = None,
    transformer: str | None = None,
    finetune: bool = False,
) -> dict[str, dict]:
    scratch = recipe_config(corpus, data_dir)
    warm = {key: value for key, value in scratch.items() if key != "model"}
    warm["train"] = dict(scratch["train"], init_from="en-ner")
    mapped = dict(warm, train=dict(warm["train"], drop_old_labels=True))
    if CORPORA[corpus]["label_map"]:
        mapped["train"]["label_map"] = CORPORA[corpus]["label_map"]
    rows = {"scratch": scratch}
    if CORPORA[corpus].get("warm_rows", True):
        rows |= {"init_from": warm, "label_map": mapped, "tune": scratch}
    resources = resource_changes(corpus, data_dir, scratch["model"], char_lm, vectors)
    every_resource = dict(scratch["model"])
    for row, changes in resources.items():
        rows[row] = dict(scratch, model=dict(scratch["model"]) | changes)
        every_resource |= changes
    if len(resources) > 1:
        rows["all"] = dict(scratch, model=every_resource)
    if transformer:
        rows |= encoder_rows(scratch, transformer, finetune)
    return rows


FINETUNED_EPOCHS = 8


def encoder_rows(scratch: dict, transformer: str, finetune: bool) -> dict[str, dict]:
    """The rows of a pretrained encoder (``model.transformer``), beside GloVe and without it;
    fine-tuned too with ``finetune``."""
    encoder = {
        "transformer": os.path.abspath(transformer),
        "transformer_layers": 4,
        "transformer_pooling": "mean",
    }
    rows = {"encoder": dict(scratch, model=dict(scratch["model"]) | encoder)}
    alone = dict(scratch["model"]) | encoder | {"embeddings": None}
    vocab = dict(scratch["vocab"], embedding_words=0)  # no vector words to add
    rows["encoder_only"] = dict(scratch, vocab=vocab, model=alone)
    if finetune:
        tuned = dict(rows["encoder"]["model"], transformer_finetune=True)
        # Each fine-tuned epoch runs the encoder backward over every sentence; the frozen
        # rows peaked within a few epochs (docs/experiments.md), so 8 are enough.
        short = dict(scratch["train"], epochs=FINETUNED_EPOCHS)
        rows["encoder_finetuned"] = dict(scratch, model=tuned, train=short)
    return rows


def resource_changes(
    corpus: str, data_dir: str, scratch_model: dict, char_lm: str | None, vectors: str | None
) -> dict[str, dict]:
    """The ``model`` keys each resource row changes in the scratch config, by row: the rows of
    the resources this corpus has and this run was given."""
    changes = {}
    if vectors:
        # Both files side by side; model.word_dim left out is the sum of their sizes.
        embeddings = [scratch_model["embeddings"], os.path.abspath(vectors)]
        changes["vectors"] = {"embeddings": embeddings, "word_dim": None}
    if CORPORA[corpus]["lexicons"]:
        lexicons = {
            label: os.path.abspath(os.path.join(data_dir, name))
            for label, name in CORPORA[corpus]["lexicons"].items()
        }
        changes["dictionaries"] = {"lexicons": lexicons}
    if char_lm:
        changes["char_lm"] = {"char_lm": os.path.abspath(char_lm)}
    return changes


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


def write_config(row: str, config: dict, out_dir: str) -> str:
    """The row's config written to OUT/CORPUS/ROW.yaml; its path."""
    config_path = os.path.join(out_dir, f"{row}.yaml")
    with open(config_path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return config_path


def shown(argv: list[str]) -> str:
    """``argv`` as a user types it, paths relative to the repository."""
    return "crftag " + " ".join(argv[3:]).replace(ROOT + os.sep, "")


def run_row(row: str, config: dict, out_dir: str, args) -> dict:
    config_path = write_config(row, config, out_dir)
    run_dir = os.path.join(out_dir, row)
    argv = command(row, config_path, run_dir, args.tune_minutes)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    started = time.perf_counter()
    with open(os.path.join(out_dir, f"{row}.log"), "a", encoding="utf-8") as log:
        subprocess.run(argv, check=True, cwd=ROOT, env=env, stdout=log, stderr=log)
    minutes = (time.perf_counter() - started) / 60
    dev, test = test_f1(row, run_dir)
    return {
        "command": shown(argv),
        "dev_f1": round(100 * dev, 2),
        "test_f1": round(100 * test, 2),
        "minutes": round(minutes, 1),
    }


def speeds(run_dir: str, test_path: str, threads: int) -> dict:
    """The tokens/s of the run's training (its epochs, from metrics.json) and of tagging its
    test file with ``crftag eval`` in ``threads`` threads, timed whole (the model's load
    included), with the machine's load average beside it: the rows run beside other jobs."""
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as handle:
        training = json.load(handle)["tokens_per_second"]
    argv = CRFTAG + ["eval", "-m", run_dir, test_path, "--json"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    load = os.getloadavg()[0]
    started = time.perf_counter()
    scored = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if scored.returncode != 0:
        said = (scored.stderr.strip().splitlines() or ["no message"])[-1]
        raise CrftagError(f"{run_dir}: tagging its test file failed: {said}")
    tokens = json.loads(scored.stdout.splitlines()[0])["tokens"]
    return {
        "train_tokens_per_second": round(training),
        "tag_tokens_per_second": round(tokens / seconds),
        "tag_measured": f"crftag eval of the test file, load included, {threads} thread(s), "
        f"load average {load:.1f}, {datetime.date.today().isoformat()}",
    }


AVERAGES = ("micro", "macro", "weighted")  # metrics.json's entity scores beside the types'
PATH_KEYS = {
    "data": ("train", "dev", "test"),
    "model": ("embeddings", "lexicons", "char_lm", "transformer"),
}


def file_names(value):
    """``value`` with each path reduced to its file's name (through lists and mappings)."""
    if isinstance(value, dict):
        return {key: file_names(item) for key, item in value.items()}
    if isinstance(value, list):
        return [file_names(item) for item in value]
    return os.path.basename(value) if isinstance(value, str) else value


def config_differences(expected: dict, trained: dict) -> list[str]:
    """The ``section.key`` names whose values differ between two configs, each completed with
    crftag's defaults; file paths are compared by the file's name only, and a ``word_dim``
    ``expected`` leaves to the vector files is whatever the trained run read from them."""
    completed = [Config.from_dict(config).to_dict() for config in (expected, trained)]
    for config in completed:
        for section, keys in PATH_KEYS.items():
            for key in keys:
                config[section][key] = file_names(config[section][key])
    ours, theirs = completed
    if ours["model"]["word_dim"] is None:  # left to the files: the run stores what it read
        ours["model"]["word_dim"] = theirs["model"]["word_dim"]
    return [
        f"{section}.{key}"
        for section, values in ours.items()
        for key, value in values.items()
        if theirs[section][key] != value
    ]


def recorded_row(row: str, config: dict, run_dir: str, out_dir: str, trained_at: str) -> dict:
    """The row read from ``run_dir``, a finished ``crftag train`` of ``config`` at commit
    ``trained_at``; raises CrftagError if the run's config is another."""
    checkpoint = os.path.join(run_dir, "model.pt")
    state = read_checkpoint(checkpoint)
    differing = config_differences(config, state["config"])
    lexicons = config["model"].get("lexicons")
    if lexicons and read_lexicons(lexicons).to_state() != state["vocabularies"]["lexicons"]:
        differing.append("the entries of model.lexicons")
    if differing:
        raise CrftagError(
            f"{checkpoint}: trained with another config than the {row} row's "
            f"({', '.join(differing)} differ)"
        )
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    seconds = sum(epoch["seconds"] for epoch in metrics["history"])
    entities = metrics["test_scores"]["entities"]
    types = [label for label in entities if label not in AVERAGES]
    config_path = write_config(row, config, out_dir)
    trained_on = datetime.date.fromtimestamp(os.path.getmtime(checkpoint))
    return {
        "command": shown(command(row, config_path, os.path.join(out_dir, row), 0)),
        "dev_f1": round(100 * metrics["dev"], 2),
        "test_f1": round(100 * metrics["test"], 2),
        "test_precision": round(100 * entities["micro"]["precision"], 2),
        "test_recall": round(100 * entities["micro"]["recall"], 2),
        "test_f1_by_type": {label: round(100 * entities[label]["f1"], 2) for label in types},
        "minutes": round(seconds / 60, 1),
        "minutes_of": "training epochs (a recorded run)",
        "date": trained_on.isoformat(),
        "commit": trained_at,
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", choices=sorted(CORPORA))
    parser.add_argument("--data", required=True, help="the folder with the corpus's files")
    parser.add_argument("--tune-minutes", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each run")
    parser.add_argument("--rows", nargs="*", default=None, help="default: every row")
    parser.add_argument("--from-run", action="append", default=[], metavar="ROW=RUN_DIR")
    parser.add_argument("--commit", help="the commit that trained the --from-run runs")
    parser.add_argument("--char-lm", help="crftag pretrain's output, for the char_lm row")
    parser.add_argument("--vectors", help="a vector file of the domain, for the vectors row")
    parser.add_argument("--transformer", help="a Hugging Face model folder, for the encoder rows")
    parser.add_argument("--finetune", action="store_true", help="with --transformer: fine-tuned")
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "your_data"))
    output.add_record_option(parser)
    args = parser.parse_args()
    args.from_run = dict(item.partition("=")[::2] for item in args.from_run)
    if any(not row or not run_dir for row, run_dir in args.from_run.items()):
        parser.error("--from-run takes ROW=RUN_DIR")
    if args.from_run and not args.commit:
        parser.error("--from-run needs --commit, the commit whose code trained the run")
    return args


def save(corpus: str, entry: dict, record: bool) -> None:
    """``entry`` into your_data.json (benchmarks/output.py says which); the keys and rows it
    lacks are kept."""
    results = {}
    previous = output.previous_path("your_data.json", record)
    if os.path.exists(previous):
        with open(previous, encoding="utf-8") as handle:
            results = json.load(handle)
    kept = results.get(corpus, {})
    results[corpus] = kept | entry | {"rows": kept.get("rows", {}) | entry["rows"]}
    with open(output.result_path("your_data.json", record), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(results, indent=2) + "\n")


def fail(message: str) -> None:
    """``message`` as one line on stderr, and exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    args = arguments()
    out_dir = os.path.join(args.out, args.corpus)
    os.makedirs(out_dir, exist_ok=True)
    done_path = os.path.join(out_dir, "rows.json")
    done = {}
    if os.path.exists(done_path):
        with open(done_path, encoding="utf-8") as handle:
            done = json.load(handle)
    configs = row_configs(
        args.corpus, args.data, args.char_lm, args.vectors, args.transformer, args.finetune
    )
    rows = args.rows or list(args.from_run) or list(configs)
    unknown = sorted(row for row in {*rows, *args.from_run} if row not in configs)
    if unknown:
        fail(f"{args.corpus} has no row {', '.join(unknown)} (its rows: {', '.join(configs)})")
    from provenance import commit  # benchmarks/provenance.py, beside this script

    measured_at = commit()
    for row in rows:
        if row in args.from_run:
            try:
                done[row] = recorded_row(
                    row, configs[row], args.from_run[row], out_dir, args.commit
                )
            except (CrftagError, OSError) as error:
                fail(str(error))
        elif row not in done:
            done[row] = run_row(row, configs[row], out_dir, args) | {"commit": measured_at}
        if row != "tune" and "tag_tokens_per_second" not in done[row]:
            run_dir = args.from_run.get(row, os.path.join(out_dir, row))
            try:
                done[row] |= speeds(run_dir, configs[row]["data"]["test"], args.threads)
            except CrftagError as error:
                fail(str(error))
        with open(done_path, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(done, indent=2) + "\n")
        print(f"{args.corpus} {row}: {done[row]}", flush=True)
    described = ("title", "source", "label_map", "dictionary")
    meta = {key: CORPORA[args.corpus][key] for key in described if key in CORPORA[args.corpus]}
    entry = dict(meta)
    if any(row not in args.from_run for row in rows):  # a recorded row carries its own date
        entry |= {"date": datetime.date.today().isoformat(), "threads": args.threads}
    if "tune" in rows:
        entry["tune_minutes"] = args.tune_minutes
    save(args.corpus, entry | {"rows": {row: done[row] for row in rows}}, args.record)


if __name__ == "__main__":
    main()
