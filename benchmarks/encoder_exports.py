"""An encoder model's ONNX exports against its torch form, on its corpus's test file: how many
sentences the float32 and int8 exports tag as torch does, and each form's score.

    python benchmarks/encoder_exports.py NAME=MODEL=TEST_FILE [...] [--work DIR] [--record]

Each MODEL (a run directory or a checkpoint) has ``model.transformer``: a recorded corpus's
``encoder`` row, or a bundled model's teacher. It is exported with ``crftag export --format
onnx`` and with ``--int8`` into ``--work`` (once; reused after); the three forms tag TEST_FILE's
sentences in one process (documents together, batch 64, as ``crftag eval`` tags them); the
scores are ``crftag eval``'s (entity micro F1 for span tags, token accuracy otherwise). The targets
(docs/transformer.md): the float32 export's tags identical to torch's on every sentence, and
int8 within 0.3 points of float32. Writes runs/bench/encoder_exports.json (``--record``:
benchmarks/results/encoder_exports.json, benchmarks/output.py; ``--json PATH``: there), one
entry per NAME, the others kept, each with the commit checked out when the run started.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
from provenance import commit  # noqa: E402

FORMS = ("torch", "onnx float32", "onnx int8")
INT8_TOLERANCE = 0.3  # points of F1 (or accuracy) int8 may lose against float32


def exports(name: str, model: str, work: str) -> dict[str, str]:
    """The model file of each form: the checkpoint and its two ONNX exports, made once."""
    checkpoint = os.path.join(model, "model.pt") if os.path.isdir(model) else model
    paths = {"torch": checkpoint}
    for form, extra in (("onnx float32", []), ("onnx int8", ["--int8"])):
        path = os.path.join(work, f"{name}-{form.split()[1]}.onnx")
        if not os.path.exists(path):
            argv = ["export", checkpoint, path + ".part", "--format", "onnx", *extra]
            subprocess.run([sys.executable, "-m", "crftag", *argv], check=True, cwd=ROOT)
            os.replace(path + ".part", path)
        paths[form] = path
    return paths


def compared(paths: dict[str, str], test_file: str) -> dict:
    """Each form's score on ``test_file`` and its sentences tagged as torch tags them."""
    import crftag
    from crftag.data.labelled import read_labelled
    from crftag.scoring.evaluate import headline, score_tagged, tag_sentences

    sentences = read_labelled(test_file, "auto", None, None, "error")
    tagged = {}
    for form, path in paths.items():
        tagger = crftag.load(path, device="cpu")
        tagged[form] = (tagger, tag_sentences(tagger, sentences))
    reference = tagged["torch"][1].tags
    rows = {}
    for form, (tagger, found) in tagged.items():
        scores = score_tagged(sentences, found, tags_are_spans=tagger.tags_are_spans)
        same = sum(a == b for a, b in zip(found.tags, reference, strict=True))
        rows[form] = {
            "score": round(100 * headline(scores), 2),
            "sentences_as_torch": same,
            "file_mb": round(os.path.getsize(paths[form]) / 1e6, 1),
        }
    return {"sentences": len(sentences), "forms": rows}


def verdict(entry: dict) -> dict:
    """The two targets, met or not."""
    forms, count = entry["forms"], entry["sentences"]
    loss = round(forms["onnx float32"]["score"] - forms["onnx int8"]["score"], 2)
    return {
        "float32_tags_as_torch": forms["onnx float32"]["sentences_as_torch"] == count,
        "int8_points_below_float32": loss,
        "int8_within_tolerance": loss <= INT8_TOLERANCE,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="NAME=MODEL=TEST_FILE")
    parser.add_argument("--work", default=os.path.join(ROOT, "runs", "bench-encoder-exports"))
    parser.add_argument("--json", help="write the results here (default: benchmarks/output.py)")
    output.add_record_option(parser)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    measured_at = commit()  # the code that runs, though HEAD may move during a long run
    entries = {}
    for item in args.models:
        name, model, test_file = item.split("=", 2)
        entry = compared(exports(name, model, args.work), test_file)
        entry |= verdict(entry) | {
            "model": os.path.relpath(os.path.abspath(model), ROOT),
            "test_file": os.path.basename(test_file),
            "date": datetime.date.today().isoformat(),
            "commit": measured_at,
        }
        entries[name] = entry
        print(json.dumps({name: entry}), flush=True)
    output.merge_entries("encoder_exports.json", entries, args.record, args.json)


if __name__ == "__main__":
    main()
