"""int8 weights against float32 on the real test sets: file size, tokens/s and the score change.

    python benchmarks/int8.py            (make bench-int8)

For `en-ner` on CoNLL-2003 `eng.testb` (entity F1, as `crftag eval` scores it) and `en-pos` on
UD English-EWT test (token accuracy), five ways of running the bundled model:

    torch fp32         the checkpoint in torch (Tagger)
    torch int8         torch.ao.quantization.quantize_dynamic of every nn.LSTM (the character
                       LSTM too) and nn.Linear, qint8; embeddings stay float32
    exported fp32      `crftag export --format numpy`, run by the NumPy runtime (ArrayTagger)
    exported int8      --int8 without the embeddings: LSTM and linear matrices only
    exported int8+emb  `crftag export --format numpy --int8`: the word embeddings too

Tokens/s is the best of five passes over the whole file after a warm-up on 64 sentences, batch
64, torch on 2 threads (NumPy's BLAS too); loading is not timed. The rule for making int8 the
default: at most 0.2 F1 / 0.1 accuracy points lost against torch fp32, and at least 1.3x the
tokens/s of fp32 on the same path. Prints a table; writes runs/bench/int8.json
(--record: benchmarks/results/int8.json, benchmarks/output.py).
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "2")  # before NumPy loads its BLAS

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import replace  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks import output  # noqa: E402
from crftag.data.conll import ColumnSpec, document_keys, read_corpus  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import export_arrays, load_model, model_payload  # noqa: E402
from crftag.modelfiles.registry import resolve_model_path  # noqa: E402
from crftag.scoring.evaluate import score  # noqa: E402
from crftag.scoring.tables import fixed_width  # noqa: E402

try:
    from crftag.inference.array_tagger import ArrayTagger  # noqa: E402
except ImportError:
    from crftag.runtime.tagger import ArrayTagger  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")
CASES = [
    ("en-ner", os.path.join(DATA, "conll2003", "eng.testb"), ColumnSpec()),
    (
        "en-pos",
        os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-test.conllu"),
        ColumnSpec.for_format("conllu"),
    ),
]
BATCH_SIZE = 64
THREADS = 2
MAX_LOSS = {"entity F1": 0.2, "accuracy": 0.1}  # points, against torch fp32
MIN_SPEEDUP = 1.3  # tokens/s against fp32 on the same path
BASELINES = {  # the fp32 run each variant's speed is compared with
    "torch fp32": "torch fp32",
    "torch int8": "torch fp32",
    "exported fp32": "exported fp32",
    "exported int8": "exported fp32",
    "exported int8+emb": "exported fp32",
}


def timed(tagger, sentences, documents, repeats: int) -> tuple[list[list[str]], float]:
    """(tags, best seconds of ``repeats`` passes) after a warm-up on the first batch."""
    tagger.tag(sentences[:BATCH_SIZE], BATCH_SIZE, documents[:BATCH_SIZE])
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        tags = tagger.tag(sentences, BATCH_SIZE, documents)
        best = min(best, time.perf_counter() - start)
    return tags, best


def torch_int8(loaded):
    """``loaded`` with its network dynamically quantized: nn.LSTM and nn.Linear in qint8, and
    the names of the modules that were replaced."""
    with warnings.catch_warnings():
        # torch.ao.quantization warns that it is deprecated (docs/int8.md says so); kept quiet
        # here so the table is readable.
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(
            loaded.model, {torch.nn.LSTM, torch.nn.Linear}, dtype=torch.qint8
        )
    dynamic = torch.ao.nn.quantized.dynamic
    replaced = [
        name
        for name, module in quantized.named_modules()
        if isinstance(module, (dynamic.LSTM, dynamic.Linear))
    ]
    return replace(loaded, model=quantized.eval()), replaced


def saved_size(payload: dict, folder: str, name: str) -> int:
    """Bytes of ``payload`` written with torch.save (what a checkpoint file would take)."""
    path = os.path.join(folder, name)
    torch.save(payload, path)
    return os.path.getsize(path)


def runners(name: str, folder: str) -> tuple[list[tuple[str, object, int]], list[str]]:
    """(variant, tagger, file bytes) for the five variants of bundled model ``name``, and the
    torch modules that dynamic quantization replaced."""
    loaded = load_model(name)
    quantized, replaced = torch_int8(load_model(name))
    # The checkpoint's description around the quantized state dict (packed int8 LSTM and
    # linear weights, float32 embeddings), as a checkpoint of the quantized model would hold.
    payload = {**model_payload(loaded), "state_dict": quantized.model.state_dict()}
    int8_bytes = saved_size(payload, folder, f"{name}-int8.pt")
    variants = [
        ("torch fp32", Tagger.from_loaded(loaded), os.path.getsize(resolve_model_path(name))),
        ("torch int8", Tagger.from_loaded(quantized), int8_bytes),
    ]
    for variant, int8, embeddings in [
        ("exported fp32", False, False),
        ("exported int8", True, False),
        ("exported int8+emb", True, True),
    ]:
        path = os.path.join(folder, f"{name}-{variant.replace(' ', '-')}.npz")
        export_arrays(path, loaded, int8=int8, int8_embeddings=embeddings)
        variants.append((variant, ArrayTagger.load(path), os.path.getsize(path)))
    return variants, replaced


def measure(name: str, path: str, spec: ColumnSpec, folder: str, repeats: int) -> dict:
    """Every variant of ``name`` on the labelled file ``path``: size, speed, score."""
    gold = read_corpus(path, spec)
    sentences = [list(sentence.tokens) for sentence in gold]
    documents = document_keys(gold)
    gold_tags = [sentence.tags for sentence in gold]
    tokens = sum(map(len, sentences))
    variants, replaced = runners(name, folder)
    rows, reference = [], None
    for variant, tagger, size in variants:
        tags, seconds = timed(tagger, sentences, documents, repeats)
        scores = score(gold_tags, tags, tags_are_spans=tagger.tags_are_spans)
        if tagger.tags_are_spans:
            metric, value = "entity F1", 100 * scores["entities"]["micro"]["f1"]
        else:
            metric, value = "accuracy", 100 * scores["accuracy"]
        reference = reference or tags
        rows.append(
            {
                "variant": variant,
                "bytes": size,
                "tokens_per_second": round(tokens / seconds),
                "metric": metric,
                "score": round(value, 2),
                "identical_sentences": sum(a == b for a, b in zip(reference, tags, strict=True)),
            }
        )
        print(f"  {name} {variant}: {rows[-1]}", file=sys.stderr, flush=True)
    return {
        "model": name,
        "file": os.path.basename(path),
        "sentences": len(sentences),
        "tokens": tokens,
        "torch_int8_modules": replaced,
        "rows": _compared(rows),
    }


def _compared(rows: list[dict]) -> list[dict]:
    """Each row with its score change against torch fp32 (points) and its speed-up against the
    fp32 run of its own path; an int8 row also with whether each half of the rule holds."""
    by_variant = {row["variant"]: row for row in rows}
    base = by_variant["torch fp32"]
    for row in rows:
        baseline = by_variant[BASELINES[row["variant"]]]
        row["change"] = round(row["score"] - base["score"], 2)
        row["speedup"] = round(row["tokens_per_second"] / baseline["tokens_per_second"], 2)
        row["speedup_vs_torch_fp32"] = round(
            row["tokens_per_second"] / base["tokens_per_second"], 2
        )
        if baseline is not row:
            row["within_loss"] = -row["change"] <= MAX_LOSS[row["metric"]]
            row["fast_enough"] = row["speedup"] >= MIN_SPEEDUP
    return rows


def decision(models: list[dict]) -> dict:
    """Per int8 variant: whether it meets the rule on both models."""
    verdicts = {}
    for variant in ("torch int8", "exported int8", "exported int8+emb"):
        rows = [row for model in models for row in model["rows"] if row["variant"] == variant]
        verdicts[variant] = {
            "within_loss": all(row["within_loss"] for row in rows),
            "fast_enough": all(row["fast_enough"] for row in rows),
            "default": all(row["within_loss"] and row["fast_enough"] for row in rows),
        }
    return verdicts


def machine() -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            cpu = next(line.split(":", 1)[1].strip() for line in stream if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "quantized_engine": torch.backends.quantized.engine,
    }


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def table(models: list[dict]) -> str:
    headers = ["model", "variant", "MB", "tokens/s", "score", "change", "speed-up", "identical"]
    rows = [
        [
            model["model"],
            row["variant"],
            f"{row['bytes'] / 1e6:.1f}",
            f"{row['tokens_per_second']:,}",
            f"{row['score']:.2f}",
            f"{row['change']:+.2f}",
            f"{row['speedup']:.2f}x",
            f"{row['identical_sentences']}/{model['sentences']}",
        ]
        for model in models
        for row in model["rows"]
    ]
    return fixed_width(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed passes per variant")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    options = parser.parse_args()
    options.json = options.json or output.result_path("int8.json", options.record)
    torch.set_num_threads(THREADS)
    with tempfile.TemporaryDirectory() as folder:
        models = [measure(*case, folder, options.repeats) for case in CASES]
    result = {
        "benchmark": "int8",
        "command": "make bench-int8",
        "date": datetime.date.today().isoformat(),
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(),
        "settings": {"batch_size": BATCH_SIZE, "threads": THREADS, "repeats": options.repeats},
        "rule": {"max_loss_points": MAX_LOSS, "min_speedup": MIN_SPEEDUP},
        "models": models,
        "decision": decision(models),
    }
    with open(options.json, "w", encoding="utf-8") as stream:
        json.dump(result, stream, indent=2)
        stream.write("\n")
    print(table(models))
    print("change: points against torch fp32; speed-up: tokens/s against fp32 on the same path")
    print(json.dumps(result["decision"]))


if __name__ == "__main__":
    main()
