"""Tokens/s of the Ray and Spark examples beside `crftag predict --jobs 2`, whole commands, in
one run on this machine (`make bench-cluster`; docs/cluster.md).

    python benchmarks/cluster.py [--repeat 4] [--runs 1] [--record] [--results FILE]

The text of `eng.testb` (one sentence a line, `-DOCSTART-` dropped) repeated REPEAT times is
tagged with the bundled `en-ner` into JSON lines by each command, in turn, RUNS times:

- `crftag predict --format jsonl --jobs 2`
- `examples/cluster/ray_predict.py --actors 2` (a local Ray cluster, started by the script)
- `examples/cluster/spark_predict.py --master local[2]`

Each command is also timed on a one-line file: its fixed cost (interpreter, engine start-up,
model loading, job planning), which the whole-command figure includes. Prints and writes
(runs/bench/cluster.json; --record: benchmarks/results/, benchmarks/output.py) the median wall
time, tokens/s with and without the fixed cost, the ratio to predict --jobs 2, and whether each
output is predict's bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402

TEST_FILE = os.path.join(ROOT, "..", "shared", "data", "conll2003", "eng.testb")
COMMANDS = {
    "predict --jobs 2": ["-m", "crftag", "predict", "-m", "en-ner", "--format", "jsonl"]
    + ["--jobs", "2", "{texts}"],
    "ray (2 actors)": ["examples/cluster/ray_predict.py", "{texts}", "{output}", "-m", "en-ner"]
    + ["--actors", "2"],
    "spark local[2]": ["examples/cluster/spark_predict.py", "{texts}", "{output}", "-m", "en-ner"]
    + ["--master", "local[2]"],
}


def run(name: str, texts: str, output: str) -> float:
    """Wall seconds of one command (predict writes to stdout, the examples to ``output``)."""
    arguments = [part.format(texts=texts, output=output) for part in COMMANDS[name]]
    environment = {**os.environ, "PYTHONPATH": ROOT}
    start = time.perf_counter()
    with open(output if name.startswith("predict") else os.devnull, "w") as stdout:
        subprocess.run(
            [sys.executable, *arguments],
            cwd=ROOT,
            env=environment,
            check=True,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4, help="copies of eng.testb's text")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--results", help="JSON file to write (default: see --record)")
    output.add_record_option(parser)
    arguments = parser.parse_args()
    arguments.results = arguments.results or output.result_path("cluster.json", arguments.record)
    lines = [" ".join(s.tokens) for s in read_corpus(TEST_FILE, ColumnSpec()) if s.tokens]
    lines *= arguments.repeat
    tokens = sum(len(line.split()) for line in lines)
    results = {"lines": len(lines), "tokens": tokens, "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as folder:
        texts, one = os.path.join(folder, "texts.txt"), os.path.join(folder, "one.txt")
        with open(texts, "w", encoding="utf-8") as stream:
            stream.write("\n".join(lines) + "\n")
        with open(one, "w", encoding="utf-8") as stream:
            stream.write(lines[0] + "\n")
        seconds = {name: [] for name in COMMANDS}
        fixed = {name: [] for name in COMMANDS}
        outputs = {}
        for _ in range(arguments.runs):
            for index, name in enumerate(COMMANDS):
                outputs[name] = os.path.join(folder, f"out{index}.jsonl")
                seconds[name].append(run(name, texts, outputs[name]))
                fixed[name].append(run(name, one, os.path.join(folder, "one.jsonl")))
        reference = pathlib.Path(outputs["predict --jobs 2"]).read_bytes()
        for name in COMMANDS:
            wall, start = statistics.median(seconds[name]), statistics.median(fixed[name])
            same = pathlib.Path(outputs[name]).read_bytes() == reference
            results[name] = {
                "seconds": seconds[name],
                "one_line_seconds": fixed[name],
                "tokens_per_second": tokens / wall,
                "tokens_per_second_without_fixed_cost": tokens / max(wall - start, 1e-9),
                "same_bytes_as_predict": same,
            }
    base = results["predict --jobs 2"]
    for name in COMMANDS:
        entry = results[name]
        entry["ratio_to_predict"] = entry["tokens_per_second"] / base["tokens_per_second"]
        entry["ratio_without_fixed_cost"] = (
            entry["tokens_per_second_without_fixed_cost"]
            / base["tokens_per_second_without_fixed_cost"]
        )
        print(
            f"{name}: {statistics.median(entry['seconds']):.1f} s ({tokens:,} tokens), "
            f"{entry['tokens_per_second']:,.0f} tokens/s ({entry['ratio_to_predict']:.2f}x); "
            f"one line {statistics.median(entry['one_line_seconds']):.1f} s; without it "
            f"{entry['tokens_per_second_without_fixed_cost']:,.0f} tokens/s "
            f"({entry['ratio_without_fixed_cost']:.2f}x); same bytes: "
            f"{entry['same_bytes_as_predict']}"
        )
    os.makedirs(os.path.dirname(os.path.abspath(arguments.results)), exist_ok=True)
    with open(arguments.results, "w", encoding="utf-8") as stream:
        json.dump(results, stream, indent=2)


if __name__ == "__main__":
    main()
