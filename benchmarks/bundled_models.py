"""Pack trained models into the bundled format, one int8 file per model, and check its scores.

    python benchmarks/bundled_models.py                     (make models, after training)
    python benchmarks/bundled_models.py en-ner=runs/x/en-ner en-pos=runs/x/en-pos

Each NAME=MODEL (a run directory or a checkpoint; by default runs/models/NAME) is exported as
`crftag export MODEL OUT --format numpy --int8` does, and both are scored on the test file of
the model's config (`data.test`): the model in torch, float32, and the packed file on the NumPy
runtime that tags a bundled name. Entity micro F1 for a span model, token accuracy otherwise, as
`crftag eval` scores them. A packed file within 0.05 points of its model replaces
crftag/models/NAME.npz; one further off is refused and the command exits 1. Writes the scores
to runs/bench/bundled_models.json, or with --record to benchmarks/results/bundled_models.json
(benchmarks/output.py); rows of models not named are kept, with their date and commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from benchmarks.provenance import commit  # noqa: E402
from crftag.inference.array_tagger import ArrayTagger  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import export_arrays, load_model  # noqa: E402
from crftag.modelfiles.registry import BUNDLED_MODELS, MODELS_DIR  # noqa: E402
from crftag.scoring.evaluate import headline, score_sentences  # noqa: E402

TOLERANCE = 0.05  # points of F1 or accuracy the packed file may lose or gain


def pack(name: str, source: str) -> dict:
    """Export ``source`` as int8 beside crftag/models/NAME.npz, score both, and move the file
    into place if it scores within the tolerance; the row of the results."""
    loaded = load_model(source)
    test = loaded.config.data.test
    if test is None:
        raise SystemExit(f"{source}: its config names no data.test to score the packed file on")
    sentences = loaded.config.data.read(test)
    target = os.path.join(MODELS_DIR, f"{name}.npz")
    handle, packed = tempfile.mkstemp(prefix=".partial-", suffix=".npz", dir=MODELS_DIR)
    os.close(handle)
    try:
        export_arrays(packed, loaded, int8=True, int8_embeddings=True)
        float32 = 100 * headline(score_sentences(Tagger.from_loaded(loaded, "cpu"), sentences))
        int8 = 100 * headline(score_sentences(ArrayTagger.load(packed), sentences))
        row = {
            "name": name,
            "source": os.path.relpath(source, ROOT),
            "test": os.path.relpath(test, ROOT),
            "score": "entity micro F1" if loaded.data_scheme != "none" else "token accuracy",
            "float32": round(float32, 2),
            "int8": round(int8, 2),
            "change": round(int8 - float32, 3),
            "bytes": os.path.getsize(packed),
        }
        row["packed"] = abs(int8 - float32) <= TOLERANCE
        if row["packed"]:
            os.replace(packed, target)
    finally:
        if os.path.exists(packed):
            os.unlink(packed)
    return row


def kept_rows(rows: list[dict], record: bool) -> list[dict]:
    """The rows of the results file for the bundled models not packed now, each with the date
    and commit it was packed at."""
    previous = output.previous_path("bundled_models.json", record)
    if not os.path.exists(previous):
        return []
    with open(previous, encoding="utf-8") as stream:
        earlier = json.load(stream)
    packed_now = {row["name"] for row in rows}
    stamp = {key: earlier[key] for key in ("date", "commit") if key in earlier}
    return [stamp | row for row in earlier["models"] if row["name"] not in packed_now]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "models",
        nargs="*",
        metavar="NAME=MODEL",
        help="bundled name and the run directory or checkpoint to pack (default: every bundled "
        "model from runs/models/NAME)",
    )
    output.add_record_option(parser)
    args = parser.parse_args()
    pairs = [item.split("=", 1) for item in args.models] or [
        [name, os.path.join("runs", "models", name)] for name in BUNDLED_MODELS
    ]
    for pair in pairs:
        if len(pair) != 2 or pair[0] not in BUNDLED_MODELS:
            parser.error(f"expected NAME=MODEL with NAME one of {', '.join(BUNDLED_MODELS)}")
    revision = commit()
    rows = [pack(name, source) for name, source in pairs]
    for row in rows:
        verdict = "packed" if row["packed"] else f"refused (more than {TOLERANCE} points off)"
        print(
            f"{row['name']}: {row['score']} float32 {row['float32']:.2f}, int8 "
            f"{row['int8']:.2f} ({row['change']:+.3f}), {row['bytes']:,} bytes: {verdict}"
        )
    for row in rows:
        row |= {"date": datetime.date.today().isoformat(), "commit": revision}
    results = {"tolerance": TOLERANCE, "models": kept_rows(rows, args.record) + rows}
    with open(
        output.result_path("bundled_models.json", args.record), "w", encoding="utf-8"
    ) as stream:
        json.dump(results, stream, indent=1)
        stream.write("\n")
    return 0 if all(row["packed"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
