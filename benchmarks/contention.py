"""crftag beside other work: each command alone, beside a busy loop and beside a second crftag
training, and two trainings at once, as wall-time ratios to alone measured in the same run; and
first, on the quiet machine, the speed that sharing must not cost.

    python benchmarks/contention.py [--rounds 3] [--quick]        (make bench-contention)

Quiet speed: one epoch of ``configs/conll03.yaml`` (``--set train.epochs=1``, the
``tokens_per_second`` of its metrics.json) as the command runs it, with no setting, against the
same build with the BiLSTM loops' second thread on OpenMP's pool and ``GOMP_SPINCOUNT=300000``
(libgomp's own default, whose threads spin for a core between parallel regions: the fastest a
quiet machine was), and, for the record, OpenMP's pool with the passive wait the command sets
(what crftag did before its loops had their own partner thread), alternately, ``--rounds``
rounds, nothing else running. Target: the median ratio to the spinning pool >= 0.95. Skipped
where ../shared/data is missing.

The commands, each a whole process as a user runs it:
- train: ``crftag train configs/sample.yaml -q``;
- predict, NumPy runtime: ``crftag predict -m en-ner`` on eng.testb's token lines (the bundled
  sample's sentences where ../shared/data is missing);
- predict, torch checkpoint: the same with the bundled en-ner written as a torch checkpoint;
- eval: ``crftag eval eng.testb -m en-ner``;
- serve: ``crftag serve -m en-ner`` already running, answering a fixed number of
  ``POST /predict`` requests from four client threads (the time from the first to the last).

Each is timed alone, beside ``python3 -c "while True: pass"`` (one busy core) and beside a
second ``crftag train configs/sample.yaml`` running in a loop (both cores asked for), in
``--rounds`` rounds; each round's ratios are to that round's alone, and the median over rounds
is reported. Then two trainings are started together, and each one's wall time is divided by
the alone time of its round. Targets on 2 cores: every ratio <= 2.5 (a fair share of two cores
between two jobs of two threads is 2x); for training, <= 2 beside a busy loop and <= 1.5 for
two at once. Writes runs/bench/contention.json (--record: benchmarks/results/,
benchmarks/output.py); a table to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
from serve_load import free_port, git_commit, start_server, stop_server  # noqa: E402

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.scoring.tables import fixed_width  # noqa: E402

CRFTAG = [sys.executable, "-m", "crftag"]
SAMPLE = os.path.join(ROOT, "configs", "sample.yaml")
TESTB = os.path.join(ROOT, "..", "shared", "data", "conll2003", "eng.testb")
SAMPLE_TEST = os.path.join(ROOT, "data", "ner_sample.test.conll")
CONLL03 = os.path.join(ROOT, "configs", "conll03.yaml")
BUSY_LOOP = ["python3", "-c", "while True: pass"]
TARGET_RATIO = 2.5
TRAIN_TARGETS = {"beside busy loop": 2.0, "two at once": 1.5}
EPOCH_TARGET_RATIO = 0.95  # no setting against GOMP_SPINCOUNT=300000
EPOCH_SETTINGS = {
    "no setting": {},
    "OpenMP's pool, GOMP_SPINCOUNT=300000": {
        "CRFTAG_LOOP_POOL": "openmp",
        "GOMP_SPINCOUNT": "300000",
    },
    "OpenMP's pool, passive": {"CRFTAG_LOOP_POOL": "openmp"},
}
REFERENCE = "OpenMP's pool, GOMP_SPINCOUNT=300000"
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "CRFTAG_LOOP_POOL")
SERVE_CLIENTS = 4
TRAINING_START_S = 5.0  # a background training is in its epochs by then, past imports


def cpu_model() -> str:
    """The CPU's name as the kernel reports it (``model name`` of /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def epoch_tokens_per_second(directory: str, environment: dict[str, str]) -> float:
    """tokens/s of one epoch of configs/conll03.yaml, trained with the user's wait settings
    removed from the environment and ``environment`` added."""
    clean = {k: v for k, v in os.environ.items() if k not in WAIT_SETTINGS}
    output = os.path.join(directory, "epoch")
    command = [*CRFTAG, "train", CONLL03, "--set", "train.epochs=1", "-o", output]
    subprocess.run(
        [*command, "--overwrite", "-q"],
        env={**clean, **environment},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    with open(os.path.join(output, "metrics.json"), encoding="utf-8") as handle:
        return json.load(handle)["tokens_per_second"]


def quiet_epochs(rounds: int, directory: str) -> dict | None:
    """One conll03 epoch with each of EPOCH_SETTINGS, ``rounds`` rounds, the order alternating;
    the median ratio of no setting to the spinning pool; None where the corpus is missing."""
    if not os.path.exists(os.path.join(ROOT, "..", "shared", "data", "conll2003")):
        print("no ../shared/data/conll2003: the quiet epochs are skipped", file=sys.stderr)
        return None
    speeds: dict[str, list[float]] = {name: [] for name in EPOCH_SETTINGS}
    for round_number in range(1, rounds + 1):
        order = list(EPOCH_SETTINGS) if round_number % 2 else list(reversed(EPOCH_SETTINGS))
        for name in order:
            print(f"round {round_number}: one conll03 epoch, {name}", file=sys.stderr)
            speeds[name].append(epoch_tokens_per_second(directory, EPOCH_SETTINGS[name]))
    pairs = zip(speeds["no setting"], speeds[REFERENCE], strict=True)
    return {
        "tokens_per_s": {name: [round(v) for v in values] for name, values in speeds.items()},
        "ratio": round(statistics.median(a / b for a, b in pairs), 3),
        "target_ratio": EPOCH_TARGET_RATIO,
    }


def labelled_file() -> str:
    return TESTB if os.path.exists(TESTB) else SAMPLE_TEST


def write_token_lines(path: str) -> list[str]:
    """The labelled file's sentences as token lines; returns the lines."""
    lines = [" ".join(s.tokens) for s in read_corpus(labelled_file(), ColumnSpec())]
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in lines)
    return lines


def run_wall(command: list[str]) -> float:
    """Seconds the command took; its output is thrown away, a failure raised."""
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


class ServeRequests:
    """``crftag serve -m en-ner`` kept running; each call times ``requests`` answers."""

    def __init__(self, lines: list[str], requests: int, directory: str):
        self.port = free_port()
        self.bodies = [json.dumps({"text": line}).encode() for line in lines[:requests]]
        self.log = open(os.path.join(directory, "serve.log"), "w")  # noqa: SIM115
        command = [*CRFTAG, "serve", "-m", "en-ner", "--port", str(self.port)]
        self.server = start_server(command, self.port, self.log, time.monotonic() + 120)

    def _client(self, bodies: list[bytes]) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        for body in bodies:
            connection.request("POST", "/predict", body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError(f"POST /predict answered {answer.status}")
        connection.close()

    def __call__(self) -> float:
        shares = [self.bodies[client::SERVE_CLIENTS] for client in range(SERVE_CLIENTS)]
        clients = [threading.Thread(target=self._client, args=(share,)) for share in shares]
        start = time.perf_counter()
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        return time.perf_counter() - start

    def close(self) -> None:
        stop_server(self.server)
        self.log.close()


def background(kind: str, directory: str) -> subprocess.Popen | None:
    """Start the other work: None, a busy loop, or crftag trainings one after another."""
    if kind == "alone":
        return None
    if kind == "busy loop":
        command = BUSY_LOOP
    else:
        output = os.path.join(directory, "background")
        train = " ".join([*CRFTAG, "train", SAMPLE, "-o", output, "--overwrite", "-q"])
        command = ["sh", "-c", f"while true; do {train} >/dev/null 2>&1; done"]
    process = subprocess.Popen(command, start_new_session=True)
    time.sleep(TRAINING_START_S if kind == "crftag training" else 0.5)
    return process


def stop(process: subprocess.Popen | None) -> None:
    if process is not None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def two_trainings(directory: str) -> list[float]:
    """Wall seconds of each of two trainings started together."""
    commands = [
        [*CRFTAG, "train", SAMPLE, "-o", os.path.join(directory, f"pair{i}"), "--overwrite", "-q"]
        for i in (1, 2)
    ]
    start = time.perf_counter()
    running = [
        subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands
    ]
    walls = []
    for process in running:
        process.wait()
        walls.append(time.perf_counter() - start)
    if any(process.returncode for process in running):
        raise RuntimeError("a training of the pair failed")
    return walls


def workloads(directory: str, serve: ServeRequests) -> dict:
    """name -> a function timing one run of it."""
    tokens = os.path.join(directory, "tokens.txt")
    predict = [*CRFTAG, "predict", "--input-format", "tokens", tokens]
    trained = os.path.join(directory, "measured")
    checkpoint = torch_checkpoint(directory)
    return {
        "train": lambda: run_wall([*CRFTAG, "train", SAMPLE, "-o", trained, "--overwrite", "-q"]),
        "predict, NumPy runtime": lambda: run_wall([*predict, "-m", "en-ner"]),
        "predict, torch checkpoint": lambda: run_wall([*predict, "-m", checkpoint]),
        "eval": lambda: run_wall([*CRFTAG, "eval", labelled_file(), "-m", "en-ner"]),
        f"serve, {len(serve.bodies)} requests": serve,
    }


def torch_checkpoint(directory: str) -> str:
    """The bundled en-ner (one int8 export) written as a torch checkpoint in ``directory``: the
    same weights on the torch path."""
    checkpoint = os.path.join(directory, "en-ner.pt")
    subprocess.run([*CRFTAG, "export", "en-ner", checkpoint], check=True)
    return checkpoint


def measure(rounds: int, requests: int) -> dict:
    conditions = ("alone", "busy loop", "crftag training")
    walls: dict = {}
    pairs = []
    with tempfile.TemporaryDirectory() as directory:
        epochs = quiet_epochs(rounds, directory)
        lines = write_token_lines(os.path.join(directory, "tokens.txt"))
        serve = ServeRequests(lines, requests, directory)
        try:
            timed = workloads(directory, serve)
            for round_number in range(1, rounds + 1):
                for condition in conditions:
                    other = background(condition, directory)
                    try:
                        for name, run in timed.items():
                            print(f"round {round_number}: {name}, {condition}", file=sys.stderr)
                            walls.setdefault(name, {}).setdefault(condition, []).append(run())
                    finally:
                        stop(other)
                print(f"round {round_number}: two trainings at once", file=sys.stderr)
                pairs.append(two_trainings(directory))
        finally:
            serve.close()
    return {"quiet_epoch": epochs, **summarize(walls, pairs)}


def summarize(walls: dict, pairs: list[list[float]]) -> dict:
    """Median ratios over rounds, each round's against its own alone."""
    rows = {}
    for name, by_condition in walls.items():
        alone = by_condition["alone"]
        rows[name] = {"alone_s": round(statistics.median(alone), 3)}
        for condition in ("busy loop", "crftag training"):
            ratios = [w / a for w, a in zip(by_condition[condition], alone, strict=True)]
            rows[name][f"beside {condition}"] = round(statistics.median(ratios), 2)
    train_alone = walls["train"]["alone"]
    pair_ratios = [max(pair) / alone for pair, alone in zip(pairs, train_alone, strict=True)]
    return {
        "commands": rows,
        "two_trainings_at_once": {
            "walls_s": [[round(w, 2) for w in pair] for pair in pairs],
            "slower_of_the_two": round(statistics.median(pair_ratios), 2),
        },
        "target_ratio": TARGET_RATIO,
        "train_targets": TRAIN_TARGETS,
    }


TABLE_HEADERS = ["command", "alone s", "beside a busy loop", "beside a crftag training"]


def table_rows(report: dict) -> list[list[str]]:
    """Each command's alone time and ratios, then the two trainings at once."""
    rows = [
        [name, f"{row['alone_s']:.2f}", f"{row['beside busy loop']:.2f}x"]
        + [f"{row['beside crftag training']:.2f}x"]
        for name, row in report["commands"].items()
    ]
    pair = report["two_trainings_at_once"]["slower_of_the_two"]
    rows.append(["train, two at once (the slower)", "", "", f"{pair:.2f}x"])
    return rows


def epoch_line(report: dict) -> str:
    """The quiet epochs in one sentence, or '' where they were not measured."""
    epochs = report.get("quiet_epoch")
    if not epochs:
        return ""
    speeds = "; ".join(
        f"{name}: " + " / ".join(f"{v:,}" for v in values)
        for name, values in epochs["tokens_per_s"].items()
    )
    return (
        f"One epoch of configs/conll03.yaml on the quiet machine, tokens/s alternately ({speeds}):"
        f" no setting at {epochs['ratio']:.2f}x the speed of OpenMP's spinning pool (median of the"
        f" rounds;"
        f" target >= {epochs['target_ratio']}x)."
    )


def contention_table(report: dict) -> str:
    """contention.json as Markdown, for benchmarks/RESULTS.md."""
    targets = report.get("train_targets")
    train_targets = (
        f" (train: <= {targets['beside busy loop']}x beside a busy loop, <= "
        f"{targets['two at once']}x two at once)"
        if targets
        else ""
    )
    lines = [
        f"{report['date']}, {report['commit']}, {report['rounds']} round(s), median ratios to "
        f"alone; target <= {report['target_ratio']}x{train_targets}.",
        "",
        "| " + " | ".join(TABLE_HEADERS) + " |",
        "|---|---:|---:|---:|",
        *("| " + " | ".join(row) + " |" for row in table_rows(report)),
    ]
    if epoch_line(report):
        lines += ["", epoch_line(report)]
    return "\n".join(lines) + "\n"


def missed_targets(report: dict) -> list[str]:
    """The targets a report misses, each in words."""
    missed = []
    for name, row in report["commands"].items():
        for key, ratio in row.items():
            if key != "alone_s" and ratio > TARGET_RATIO:
                missed.append(f"{name} {key}: {ratio}x > {TARGET_RATIO}x")
    train = report["commands"]["train"]["beside busy loop"]
    if train > TRAIN_TARGETS["beside busy loop"]:
        missed.append(f"train beside a busy loop: {train}x > {TRAIN_TARGETS['beside busy loop']}x")
    pair = report["two_trainings_at_once"]["slower_of_the_two"]
    if pair > TRAIN_TARGETS["two at once"]:
        missed.append(f"two trainings at once: {pair}x > {TRAIN_TARGETS['two at once']}x")
    epochs = report.get("quiet_epoch")
    if epochs and epochs["ratio"] < EPOCH_TARGET_RATIO:
        missed.append(f"quiet epoch: {epochs['ratio']}x < {EPOCH_TARGET_RATIO}x")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1000, help="serve requests timed")
    parser.add_argument("--quick", action="store_true", help="one round, 200 requests")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    parser.add_argument(
        "--epochs-only", action="store_true", help="the quiet epochs alone, printed, no JSON"
    )
    args = parser.parse_args()
    args.json = args.json or output.result_path("contention.json", args.record)
    if args.epochs_only:
        with tempfile.TemporaryDirectory() as directory:
            epochs = quiet_epochs(args.rounds, directory)
        print(epoch_line({"quiet_epoch": epochs}) or "no quiet epochs: no corpus")
        return 0 if epochs and epochs["ratio"] >= EPOCH_TARGET_RATIO else 1
    rounds, requests = (1, 200) if args.quick else (args.rounds, args.requests)
    report = {
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
        "rounds": rounds,
        "data": os.path.relpath(labelled_file(), ROOT),
        **measure(rounds, requests),
    }
    print(fixed_width(TABLE_HEADERS, table_rows(report)))
    if epoch_line(report):
        print(epoch_line(report))
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    missed = missed_targets(report)
    for target in missed:
        print(f"missed: {target}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
