"""Exact round trips of `crftag convert` on real corpora.

    python benchmarks/convert_roundtrip.py [--conll eng.testb] [--conllu en_ewt-ud-test.conllu]

CoNLL-2003 `eng.testb` (IOB1) goes to span JSONL and back to IOB2 CoNLL, and is compared byte for
byte with its direct IOB2 conversion; JSONL -> brat -> JSONL must give the same records. UD
English-EWT test goes to JSONL (its UPOS as per-token tags) and back to CoNLL-U and is compared
with its direct conversion. Each conversion runs through the `crftag convert` command, as users
run it. Prints JSON to stdout and writes runs/bench/convert_roundtrip.json (with --record,
benchmarks/results/convert_roundtrip.json: benchmarks/output.py).
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "..", "shared", "data")
CRFTAG = [sys.executable, "-m", "crftag"]
sys.path.insert(0, HERE)

import output  # noqa: E402


def convert(*args: str) -> float:
    """Seconds one `crftag convert` takes; a failure stops the benchmark with its message."""
    start = time.perf_counter()
    done = subprocess.run([*CRFTAG, "convert", *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"crftag convert {' '.join(args)} failed: {done.stderr.strip()}")
    return time.perf_counter() - start


def round_trip(source: str, back_format: str, folder: str) -> dict:
    """source -> middle (JSONL) -> back, against source -> back directly."""
    name = os.path.basename(source)
    jsonl = os.path.join(folder, f"{name}.jsonl")
    direct = os.path.join(folder, f"{name}.direct")
    back = os.path.join(folder, f"{name}.back")
    seconds = convert(source, jsonl)
    convert(source, direct, "--to", back_format, "--scheme", "iob2")
    convert(jsonl, back, "--to", back_format, "--scheme", "iob2")
    brat = os.path.join(folder, f"{name}.brat") + os.sep
    convert(jsonl, brat)
    again = os.path.join(folder, f"{name}.again.jsonl")
    convert(brat, again)
    with open(jsonl, encoding="utf-8") as first, open(again, encoding="utf-8") as second:
        spans_kept = [_spans(line) for line in first] == [_spans(line) for line in second]
    with open(jsonl, encoding="utf-8") as stream:
        records = sum(1 for _ in stream)
    return {
        "file": name,
        "records": records,
        "to_jsonl_seconds": round(seconds, 2),
        f"jsonl_back_to_{back_format}_equals_direct": filecmp.cmp(direct, back, shallow=False),
        "jsonl_brat_jsonl_same_spans": spans_kept,
    }


def _spans(line: str) -> tuple:
    record = json.loads(line)
    return record["text"], [(s["start"], s["end"], s["label"]) for s in record["spans"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conll", default=os.path.join(DATA, "conll2003", "eng.testb"))
    parser.add_argument(
        "--conllu", default=os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-test.conllu")
    )
    output.add_record_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results = [
            round_trip(args.conll, "conll", folder),
            round_trip(args.conllu, "conllu", folder),
        ]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    report = {"date": datetime.date.today().isoformat(), "commit": commit, "results": results}
    with open(output.result_path("convert_roundtrip.json", args.record), "w") as stream:
        json.dump(report, stream, indent=2)
        stream.write("\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
