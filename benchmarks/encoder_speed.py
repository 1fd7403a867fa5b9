"""How fast a model with a pretrained encoder (``model.transformer``) tags, on each path, in one
run: the torch path as committed before its windows were batched by length (990fdc7's
``TransformerWords._encode``, ``_window_states`` and ``extract``, run on the same weights), the
torch path now, the ONNX float32 export and the ONNX int8 export; each in the same number of
threads, the paths taking turns round after round, the load average beside each figure. Then the
frozen extraction of training, before and after, and the physical limit: the encoder's
multiply-adds a word against the matrix-multiply rate this machine gives in the same run. Then
the start time of ``crftag predict`` of one sentence with the ONNX export, and whether it
imported torch. The extraction takes turns for ``--rounds`` rounds as the tagging does, and each
matrix-multiply rate is the best of three timings, so a slow spell of a shared machine lowers
no figure alone.

    python benchmarks/encoder_speed.py [--encoder runs/models/all-MiniLM-L6-v2]
        [--train data/ner_sample.train.conll] [--file data/ner_sample.test.conll]
        [--limit S] [--rounds R] [--threads 2] [--work runs/bench-encoder]

The model is trained once (one epoch over ``--train``, mean pooling of the last 4 layers) and
exported to ``--work``, and reused after. Prints one JSON line per measurement, and writes them
all, with the date and commit, to runs/bench/encoder_speed.json (``--record``:
benchmarks/results/, see benchmarks/output.py); :func:`table` renders the rows
docs/transformer.md quotes.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from benchmarks.provenance import commit  # noqa: E402

BASE_COMMIT = "990fdc7"  # the encoder's torch path before this benchmark's work
BATCH = 64  # the taggers' default
TRIES = 3  # timings of each matrix-multiply rate, the best kept


def crftag(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "crftag", *args], check=True, cwd=ROOT)


def prepared(work: str, encoder: str, train: str) -> dict[str, str]:
    """The run directory and its exports, made once under ``work``."""
    os.makedirs(work, exist_ok=True)
    run = os.path.join(work, "run")
    if not os.path.exists(os.path.join(run, "model.pt")):
        crftag("train", "configs/sample.yaml", "-o", run, "--device", "cpu", "--quiet",
               "--set", f"data.train={train}", "--set", "data.dev=null", "--set", "data.test=null",
               "--set", f"model.transformer={encoder}", "--set", "model.transformer_layers=4",
               "--set", "model.transformer_pooling=mean", "--set", "train.epochs=1")  # fmt: skip
    paths = {"torch": os.path.join(run, "model.pt")}
    for name, extra in (("onnx float32", []), ("onnx int8", ["--int8"])):
        path = os.path.join(work, name.replace(" ", "-") + ".onnx")
        if not os.path.exists(path):
            crftag("export", run, path, "--format", "onnx", *extra)
        paths[name] = path
    return paths


def base_functions():
    """The functions of ``crftag/nn/transformer.py`` as committed at :data:`BASE_COMMIT`."""
    source = subprocess.run(
        ["git", "show", f"{BASE_COMMIT}:crftag/nn/transformer.py"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    spec = importlib.util.spec_from_loader("crftag_base_transformer", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{BASE_COMMIT}:crftag/nn/transformer.py", "exec"), module.__dict__)
    return module.TransformerWords


def as_base(words) -> None:
    """Make a ``TransformerWords`` module run the base commit's windows and extraction."""
    base = base_functions()
    for name in ("_encode", "_window_states", "extract"):
        setattr(words, name, types.MethodType(getattr(base, name), words))


def sentences_of(path: str) -> list[list[str]]:
    from crftag.data.conll import ColumnSpec, read_corpus

    return [list(sentence.tokens) for sentence in read_corpus(path, ColumnSpec())]


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def tagging(paths: dict[str, str], sentences: list, rounds: int) -> dict[str, dict]:
    """{path name: best tokens/s over ``rounds`` and the load average then, and the share of
    the tokens it tags as the torch path does}, the paths taking turns."""
    from crftag import load

    taggers = {"torch at " + BASE_COMMIT: load(paths["torch"], device="cpu")}
    as_base(taggers["torch at " + BASE_COMMIT].model.transformer)
    taggers["torch now"] = load(paths["torch"], device="cpu")
    for name in ("onnx float32", "onnx int8"):
        taggers[name] = load(paths[name])
    words = sum(map(len, sentences))
    best = {name: {"tokens_per_second": 0.0} for name in taggers}
    tags = {name: tagger.tag(sentences, batch_size=BATCH) for name, tagger in taggers.items()}
    for round_number in range(rounds + 1):
        for name, tagger in taggers.items():
            started = time.perf_counter()
            tagger.tag(sentences, batch_size=BATCH)
            speed = words / (time.perf_counter() - started)
            if round_number and speed > best[name]["tokens_per_second"]:  # round 0 warms up
                best[name] = {"tokens_per_second": round(speed), "load_average": load_average()}
    for name, found in tags.items():  # the share of tokens tagged as the torch path tags them
        pairs = zip(found, tags["torch now"], strict=True)
        same = sum(a == b for x, y in pairs for a, b in zip(x, y, strict=True))
        best[name]["tags_as_torch"] = round(same / words, 4)
    return best


def extraction(checkpoint: str, sentences: list, rounds: int) -> dict[str, dict]:
    """Words/s of training's frozen extraction of ``sentences``, base commit and now, taking
    turns for ``rounds`` rounds, the best round of each (a fresh module each time, since the
    extraction caches what it read)."""
    from crftag.modelfiles.checkpoint import load_model

    names = ("extraction at " + BASE_COMMIT, "extraction now")
    best = {name: {"words_per_second": 0} for name in names}
    for _ in range(rounds):
        for name in names:
            words = load_model(checkpoint).model.transformer
            if name.endswith(BASE_COMMIT):
                as_base(words)
            started = time.perf_counter()
            words.extract(sentences, show_progress=False)
            speed = sum(map(len, sentences)) / (time.perf_counter() - started)
            if speed > best[name]["words_per_second"]:
                best[name] = {"words_per_second": round(speed), "load_average": load_average()}
    return best


def physical_limit(checkpoint: str, sentences: list, threads: int) -> dict:
    """Words/s the encoder could reach at this machine's measured float32 matrix-multiply rate
    (and at ONNX Runtime's int8 one, the int8 export's limit):
    its multiply-adds a subword (the projections, the feed-forward layers and the attention
    over the file's mean window) times the file's subwords a word."""
    import torch

    from crftag.data.subwords import subwords_of
    from crftag.modelfiles.checkpoint import load_model

    words = load_model(checkpoint).model.transformer
    config = words.encoder.config
    pieces = subwords_of(words.tokenizer, sentences)
    subwords = sum(len(found.ids) for found in pieces)
    window = min(subwords / len(pieces), words.width) + sum(map(len, words.frame))
    size, inner = config.hidden_size, config.intermediate_size
    layer = 4 * size * size + 2 * size * inner + 2 * window * size  # projections, FFN, attention
    per_subword = config.num_hidden_layers * layer
    per_word = per_subword * subwords / sum(map(len, sentences))
    torch.set_num_threads(threads)
    left, right = torch.randn(2048, size), torch.randn(size, inner)
    for _ in range(3):
        left @ right  # warm up
    rate = best_rate(lambda: left @ right, left.shape[0] * size * inner)
    int8_rate = int8_matmul_rate(size, inner, threads)
    return {
        "multiply_adds_per_word": round(per_word),
        "matmul_multiply_adds_per_second": round(rate),
        "words_per_second_limit": round(rate / per_word),
        "int8_matmul_multiply_adds_per_second": round(int8_rate),
        "int8_words_per_second_limit": round(int8_rate / per_word),
        "load_average": load_average(),
    }


def best_rate(product, multiply_adds: int, repeats: int = 20) -> float:
    """Multiply-adds a second of calling ``product`` (``multiply_adds`` each call): the best of
    :data:`TRIES` timings of ``repeats`` calls, the machine's rate rather than a slow spell's."""
    rate = 0.0
    for _ in range(TRIES):
        started = time.perf_counter()
        for _ in range(repeats):
            product()
        rate = max(rate, repeats * multiply_adds / (time.perf_counter() - started))
    return rate


def int8_product(weight, threads: int):
    """(an ONNX Runtime InferenceSession of ``left @ weight`` as the int8 export runs its encoder's
    products: ``weight`` (size, inner) float32 quantised by ``quantize_dynamic``, per column,
    int8, the (N, size) activations quantised on the fly; the op types of its graph)."""
    import logging
    import tempfile

    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    size, inner = weight.shape
    node = helper.make_node("MatMul", ["left", "weight"], ["product"], name="product")
    graph = helper.make_graph(
        [node], "int8_rate",
        [helper.make_tensor_value_info("left", TensorProto.FLOAT, [None, size])],
        [helper.make_tensor_value_info("product", TensorProto.FLOAT, [None, inner])],
        [numpy_helper.from_array(weight, "weight")],
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        source, target = os.path.join(folder, "float.onnx"), os.path.join(folder, "int8.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
        logging.disable(logging.WARNING)  # its advice to pre-process the graph
        try:
            quantize_dynamic(source, target, per_channel=True, weight_type=QuantType.QInt8)
        finally:
            logging.disable(logging.NOTSET)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        product = onnxruntime.InferenceSession(target, options, providers=["CPUExecutionProvider"])
        op_types = [node.op_type for node in onnx.load(target).graph.node]
    return product, op_types


def int8_matmul_rate(size: int, inner: int, threads: int) -> float:
    """Multiply-adds a second of ONNX Runtime's int8 matrix product (:func:`int8_product`) of
    (2048, size) activations and a (size, inner) weight, in ``threads``: the best of
    :data:`TRIES` timings."""
    import numpy as np

    rng = np.random.default_rng(0)
    product, _ = int8_product(rng.standard_normal((size, inner), np.float32), threads)
    left = {"left": rng.standard_normal((2048, size), np.float32)}
    for _ in range(3):
        product.run(None, left)  # warm up
    return best_rate(lambda: product.run(None, left), 2048 * size * inner)


def startup(onnx_path: str) -> dict:
    """Seconds ``crftag predict`` takes to tag one sentence with the ONNX export, and whether
    torch was imported (a second run, ``-X importtime``, lists the imports)."""
    command = [sys.executable, "-m", "crftag", "predict", "-m", onnx_path]
    started = time.perf_counter()
    subprocess.run(command, input="John lives in Berlin .\n", check=True, cwd=ROOT,
                   capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - started
    traced = subprocess.run([sys.executable, "-X", "importtime", *command[1:]],
                            input="John lives in Berlin .\n", check=True, cwd=ROOT,
                            capture_output=True, text=True)  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines()}
    return {
        "seconds": round(seconds, 2),
        "torch_imported": "torch" in imported,
        "transformers_imported": "transformers" in imported,
        "load_average": load_average(),
    }


TABLE_ROWS = (  # (path, the docs' name for it, the unit's key)
    ("torch at " + BASE_COMMIT, f"torch, as at {BASE_COMMIT}", "tokens_per_second"),
    ("torch now", "torch now (windows batched by length)", "tokens_per_second"),
    ("onnx float32", "ONNX float32", "tokens_per_second"),
    ("onnx int8", "ONNX int8", "tokens_per_second"),
    (f"extraction at {BASE_COMMIT}", f"frozen extraction, as at {BASE_COMMIT} (words/s)",
     "words_per_second"),
    ("extraction now", "frozen extraction now (words/s)", "words_per_second"),
)  # fmt: skip


def table(entry: dict) -> str:
    """The rows of docs/transformer.md's speed table: each path's rate, its ratio to the base
    commit's path of its kind, and the share of tokens tagged as the torch path now tags them."""
    measured = entry["paths"]
    lines = []
    for path, shown, key in TABLE_ROWS:
        base = measured[("torch at " if key == "tokens_per_second" else "extraction at ")
                        + BASE_COMMIT][key]  # fmt: skip
        rate = measured[path][key]
        same = measured[path].get("tags_as_torch")
        share = "" if same is None else f" {100 * same:.1f}%".replace(".0%", "%")
        lines.append(f"| {shown} | {rate:,} | {rate / base:.2f} |{share} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="runs/models/all-MiniLM-L6-v2")
    parser.add_argument("--train", default="data/ner_sample.train.conll")
    parser.add_argument("--file", default="data/ner_sample.test.conll")
    parser.add_argument("--limit", type=int, default=None, help="the file's first sentences")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", default="runs/bench-encoder")
    output.add_record_option(parser)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # ONNX Runtime's and torch's pools
    from crftag.runtime.cores import share_cores

    share_cores()  # OpenMP's threads sleep between regions, as under the crftag command
    import torch

    torch.set_num_threads(args.threads)
    paths = prepared(args.work, args.encoder, args.train)
    sentences = sentences_of(args.file)[: args.limit]
    common = {"file": os.path.basename(args.file), "sentences": len(sentences),
              "threads": args.threads}  # fmt: skip
    measured_at = commit()
    paths_measured = {}

    def report(name: str, measured: dict) -> None:
        paths_measured[name] = measured
        print(json.dumps({**common, "path": name, **measured}), flush=True)

    for name, measured in tagging(paths, sentences, args.rounds).items():
        report(name, measured)
    for name, measured in extraction(paths["torch"], sentences, args.rounds).items():
        report(name, measured)
    report("physical limit", physical_limit(paths["torch"], sentences, args.threads))
    report("predict one sentence, onnx", startup(paths["onnx float32"]))
    entry = {**common, "rounds": args.rounds, "paths": paths_measured,
             "date": datetime.date.today().isoformat(), "commit": measured_at}  # fmt: skip
    with open(output.result_path("encoder_speed.json", args.record), "w", encoding="utf-8") as f:
        f.write(json.dumps(entry, indent=2) + "\n")


if __name__ == "__main__":
    main()
