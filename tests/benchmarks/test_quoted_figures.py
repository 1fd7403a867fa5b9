"""The figures README.md and docs/ quote from benchmarks/results/*.json are the JSON's: each
quotation below is rendered from the result it comes from and must appear, as rendered, in the
document. A re-run benchmark that moves a figure fails here until the document is updated."""

import functools
import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def per_cent(fraction: float) -> str:
    return f"{fraction * 100:.2f}"


def _seeds(summary: dict) -> str:
    """'90.82 ± 0.14 (90.96, 90.81, 90.67; dev 95.12 ± 0.10)' from accuracy.json's entry."""
    tests = ", ".join(per_cent(seed["test"]) for seed in summary["seeds"])
    return (
        f"{per_cent(summary['test']['mean'])} ± {per_cent(summary['test']['std'])}** ({tests}; "
        f"dev {per_cent(summary['dev']['mean'])} ± {per_cent(summary['dev']['std'])})"
    )


def _crf_row(speed: dict, kernel: str) -> str:
    """'0.70 / 0.80 / 2.66 ms | pytorch-crf 6.05 / 7.40 / 21.95 ms: 8.73x / 9.26x / 8.26x'."""
    rows = [shape[kernel] for shape in speed["crf_kernels"]]
    own = " / ".join(ms(row["crftag_s"]) for row in rows)
    reference = " / ".join(ms(row["pytorch_crf_s"]) for row in rows)
    speedups = " / ".join(f"{row['speedup']:.2f}x" for row in rows)
    return f"{own} ms | pytorch-crf {reference} ms: {speedups}"


def _training_steps(speed: dict) -> str:
    plain, fast = speed["training_step"], speed["training_step_fast"]
    return (
        f"{plain['tokens_per_s']:,.0f} tokens/s; **{fast['tokens_per_s']:,.0f}** with "
        f"`train.fast_encoder: true` ({fast['tokens_per_s'] / plain['tokens_per_s']:.2f}x"
    )


def _encoder_floors(speed: dict) -> str:
    plain, fast = speed["training_step"], speed["training_step_fast"]
    return (
        f"{plain['encoder_floor_tokens_per_s']:,.0f} and {fast['encoder_floor_tokens_per_s']:,.0f}"
        f" tokens/s (step/encoder {plain['ratio']:.2f}x and {fast['ratio']:.2f}x)"
    )


def _predict(speed: dict) -> str:
    predict = speed["predict"]
    return (
        f"**{predict['excluding_start_up_tokens_per_s']:,.0f} tokens/s** (target "
        f"{predict['target_tokens_per_s']:,}); end to end {predict['end_to_end_tokens_per_s']:,.0f}"
        f" with {predict['start_up_s']:.2f} s start-up"
    )


def _exported_against_torch(speed: dict) -> str:
    fp32 = speed["exported_runtime"]["throughput_eng_testb"]["exported_fp32"]
    return (
        f"`en-ner.pt` in the same run: {fp32['torch_fp32_tokens_per_s']:,.0f} tokens/s, the export "
        f"{fp32['ratio_to_torch']:.2f}x that"
    )


def _one_sentence(speed: dict) -> str:
    start = speed["exported_runtime"]["start_up"]
    return (
        f"{start['exported_fp32_s']:.2f} s (exported; torch checkpoint {start['torch_fp32_s']:.2f}"
        f' s) | `python -c pass` {start["python_pass_s"]:.2f} s, `python -c "import torch"` '
        f"{start['import_torch_s']:.2f} s"
    )


def _readme_start_up(speed: dict) -> str:
    start = speed["exported_runtime"]["start_up"]
    return (
        f"in {start['exported_fp32_s']:.2f} s from a cold start ({start['torch_fp32_s']:.2f} s for "
        "a torch checkpoint)"
    )


COMMAND_NAMES = {  # contention.json's commands, as docs/results.md names them
    "train": "train",
    "predict, NumPy runtime": "predict, NumPy export",
    "predict, torch checkpoint": "predict, torch checkpoint",
    "eval": "eval",
    "serve, 1000 requests": "serve (1,000 requests)",
}


def _contention_ratios(contention: dict) -> str:
    parts = [
        f"{COMMAND_NAMES[name]} {ratios['beside busy loop']:.2f}x / "
        f"{ratios['beside crftag training']:.2f}x"
        for name, ratios in contention["commands"].items()
    ]
    two = contention["two_trainings_at_once"]["slower_of_the_two"]
    return "; ".join(parts) + f"; **two trainings at once {two:.2f}x**"


def seconds(value: float) -> str:
    """Three significant figures, as the contention tables give a command's time."""
    return f"{value:.1f} s" if value >= 10 else f"{value:.2f} s"


def _contention_table(contention: dict) -> list[str]:
    """docs/cpus.md's table cells: each command's alone time and its two ratios."""
    return [
        f"| {seconds(ratios['alone_s'])} | {ratios['beside busy loop']:.2f}x | "
        f"{ratios['beside crftag training']:.2f}x |"
        for ratios in contention["commands"].values()
    ]


def _contention_reference(contention: dict) -> str:
    alone = seconds(contention["commands"]["train"]["alone_s"])
    return f"the same commands alone in the same run (train {alone})"


def _sample_alone(contention: dict) -> str:
    return f"about {contention['commands']['train']['alone_s']:.0f} s on 2 CPU cores"


def _reference(reference: dict) -> str:
    return (
        f"{reference['crftag']['tokens_per_second']:,.0f} tokens/s | flair 0.15.1's BiLSTM-CRF: "
        f"{reference['flair']['tokens_per_second']:,.0f} tokens/s ({reference['speedup']:.2f}x"
    )


def _features(accuracy: dict) -> str:
    features = accuracy["results"]["configs/conll03_features.yaml"]
    baseline = accuracy["crfsuite_baseline"]
    return (
        f"{per_cent(features['test']['mean'])} ({per_cent(features['dev']['mean'])}) | CRFsuite, "
        f"same split: {per_cent(baseline['test'])} ({per_cent(baseline['dev'])})"
    )


def _dictionaries_test(your_data: dict) -> str:
    """'82.55 (P 86.81, R 78.68; Chemical 84.31, Disease 80.41)': BC5CDR's dictionaries row."""
    row = your_data["bc5cdr"]["rows"]["dictionaries"]
    types = ", ".join(f"{label} {f1:.2f}" for label, f1 in row["test_f1_by_type"].items())
    return (
        f"{row['test_f1']:.2f} (P {row['test_precision']:.2f}, R {row['test_recall']:.2f}; {types})"
    )


def _dictionaries_row(your_data: dict) -> str:
    """docs/results.md's table row of BC5CDR with dictionaries, from test F1 to the command."""
    row = your_data["bc5cdr"]["rows"]["dictionaries"]
    return (
        f"| {_dictionaries_test(your_data)} | {row['dev_f1']:.2f} | {row['minutes']:.1f} "
        f"(epochs only) | `{row['command']}` |"
    )


def _recorded_row(your_data: dict, corpus: str, name: str) -> str:
    """docs/results.md's table row of a recorded run, from test F1 to the command."""
    row = your_data[corpus]["rows"][name]
    types = ", ".join(f"{label} {f1:.2f}" for label, f1 in row["test_f1_by_type"].items())
    test = f"{row['test_f1']:.2f} (P {row['test_precision']:.2f}, R {row['test_recall']:.2f}; "
    return (
        f"| {test}{types}) | {row['dev_f1']:.2f} | {row['minutes']:.1f} (epochs only) "
        f"| `{row['command']}` |"
    )


ENCODER_ROWS = {
    "encoder": "beside GloVe",
    "encoder_only": "without GloVe",
    "encoder_finetuned": "fine-tuned, beside GloVe (8 epochs)",
}
CORPUS_NAMES = {"btc": "BTC", "bc5cdr": "BC5CDR", "conll03": "CoNLL-2003"}


def _encoder_row(your_data: dict, corpus: str, name: str) -> str:
    """docs/results.md's table row of an encoder row, with its training and tagging tokens/s."""
    row = your_data[corpus]["rows"][name]
    types = ", ".join(f"{label} {f1:.2f}" for label, f1 in row["test_f1_by_type"].items())
    test = f"{row['test_f1']:.2f} (P {row['test_precision']:.2f}, R {row['test_recall']:.2f}; "
    speeds = f"{row['train_tokens_per_second']:,} / {row['tag_tokens_per_second']:,}"
    return (
        f"| {CORPUS_NAMES[corpus]}, {ENCODER_ROWS[name]} | {test}{types}) | {row['dev_f1']:.2f} "
        f"| {row['minutes']:.1f} (epochs only) | {speeds} | `{row['command']}` |"
    )


def _dictionaries_prose(your_data: dict) -> str:
    row = your_data["bc5cdr"]["rows"]["dictionaries"]
    return f"test F1 {_dictionaries_test(your_data)}, dev {row['dev_f1']:.2f}"


def _char_lm_speed(speed: dict, index: int) -> str:
    """'`--hidden 256`: torch 3,074 -> 289 tokens/s (11.20x the time), NumPy export ...'."""
    row = speed["pretrained"][index]
    torch_row, numpy_row = row["torch"], row["numpy"]
    return (
        f"`--hidden {row['hidden_size']}`: torch {torch_row['tokens_per_s_without']:,.0f} -> "
        f"{torch_row['tokens_per_s_with']:,.0f} tokens/s ({torch_row['slowdown']:.2f}x the "
        f"time), NumPy export {numpy_row['tokens_per_s_without']:,.0f} -> "
        f"{numpy_row['tokens_per_s_with']:,.0f} tokens/s ({numpy_row['slowdown']:.2f}x)"
    )


# (document, result file, what it quotes): each quotation as the document writes it.
def _benchmark(name: str):
    """benchmarks/NAME.py as a module, for the quotations it renders itself."""
    path = os.path.join(ROOT, "benchmarks", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peers_table(results: dict) -> str:
    """README.md's table of crftag beside flair and spaCy, as benchmarks/peers.py renders it."""
    return _benchmark("peers").readme_table(results)


def _model_card(results: dict, name: str, part: str) -> str:
    """A quotation of docs/models/NAME.md from its card, as benchmarks/model_card.py renders it:
    ``file`` (the model file), ``stamp`` (date, commit, command) or a split's heading and table."""
    model_card = _benchmark("model_card")
    card = results[name]
    if part == "file":
        return model_card.file_line(card)
    if part == "stamp":
        return model_card.stamp(card)
    return model_card.split_section(card, part)


ENCODER_RECORDED = [
    ("btc", "encoder"),
    ("btc", "encoder_only"),
    ("btc", "encoder_finetuned"),
    ("bc5cdr", "encoder"),
    ("bc5cdr", "encoder_only"),
    ("bc5cdr", "encoder_finetuned"),
    ("conll03", "encoder"),
    ("conll03", "encoder_only"),
]

QUOTATIONS = [
    ("docs/your-data.md", "char_lm_speed", lambda r: _char_lm_speed(r, 0)),
    ("docs/your-data.md", "char_lm_speed", lambda r: _char_lm_speed(r, 1)),
    ("README.md", "accuracy", lambda r: _seeds(r["results"]["configs/conll03.yaml"])),
    ("README.md", "accuracy", lambda r: _seeds(r["results"]["configs/ud_ewt_upos.yaml"])),
    ("README.md", "speed", _readme_start_up),
    ("README.md", "contention", _sample_alone),
    ("README.md", "peers", _peers_table),
    ("docs/results.md", "accuracy", lambda r: _seeds(r["results"]["configs/conll03.yaml"])),
    ("docs/results.md", "accuracy", lambda r: _seeds(r["results"]["configs/ud_ewt_upos.yaml"])),
    ("docs/results.md", "accuracy", _features),
    ("docs/results.md", "speed", lambda r: _crf_row(r, "nll_forward_backward")),
    ("docs/results.md", "speed", lambda r: _crf_row(r, "viterbi_decode")),
    ("docs/results.md", "speed", _training_steps),
    ("docs/results.md", "speed", _encoder_floors),
    ("docs/results.md", "speed", _predict),
    ("docs/results.md", "speed", _exported_against_torch),
    ("docs/results.md", "speed", _one_sentence),
    ("docs/results.md", "reference_training", _reference),
    ("docs/results.md", "contention", _contention_ratios),
    ("docs/results.md", "contention", _contention_reference),
    ("docs/results.md", "your_data", _dictionaries_row),
    ("docs/your-data.md", "your_data", _dictionaries_prose),
    ("docs/results.md", "your_data", lambda results: _recorded_row(results, "conll03", "scratch")),
    ("docs/results.md", "your_data", lambda results: _recorded_row(results, "conll03", "vectors")),
    ("docs/results.md", "your_data", lambda results: _recorded_row(results, "conll03", "char_lm")),
    *(
        ("docs/results.md", "your_data", functools.partial(_encoder_row, corpus=c, name=n))
        for c, n in ENCODER_RECORDED
    ),
    ("docs/transformer.md", "encoder_exports", lambda results: _export_row(results["conll03"])),
    ("docs/transformer.md", "encoder_exports", lambda results: _export_row(results["btc"])),
    ("docs/transformer.md", "encoder_exports", lambda results: _export_row(results["bc5cdr"])),
    (
        "docs/transformer.md",
        "encoder_speed",
        lambda results: _benchmark("encoder_speed").table(results),
    ),
    (
        "docs/distillation.md",
        "distill",
        lambda results: _benchmark("distill").table(results["btc"]),
    ),
    *(
        (f"docs/models/{n}.md", "model_cards", functools.partial(_model_card, name=n, part=p))
        for n in ("en-ner", "en-pos")
        for p in ("file", "stamp", "dev", "test")
    ),
]


def _export_row(entry: dict) -> str:
    """'91.80 / 91.80 / 91.71 | 3,453 / 3,413 | 115.7 / 115.2 / 83.6 |' of encoder_exports.json."""
    forms = [entry["forms"][form] for form in ("torch", "onnx float32", "onnx int8")]
    scores = " / ".join(f"{form['score']:.2f}" for form in forms)
    same = " / ".join(f"{form['sentences_as_torch']:,}" for form in forms[1:])
    sizes = " / ".join(f"{form['file_mb']:.1f}" for form in forms)
    return f"{scores} | {same} | {sizes} |"


def _document(name: str) -> str:
    """The document with its line breaks as spaces, so a quotation may span lines."""
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
        return " ".join(handle.read().split())


def _result(name: str) -> dict:
    with open(os.path.join(RESULTS, f"{name}.json"), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize(
    ("document", "result", "quote"),
    QUOTATIONS,
    ids=[f"{document}:{result}:{index}" for index, (document, result, _) in enumerate(QUOTATIONS)],
)
def test_the_document_quotes_the_result(document, result, quote):
    expected = " ".join(quote(_result(result)).split())
    assert expected in _document(document), f"{document} should say: {expected}"


def test_the_contention_table_of_cpus_md_is_the_result():
    text = _document("docs/cpus.md")
    for cells in _contention_table(_result("contention")):
        assert cells in text, f"docs/cpus.md should have a row ending: {cells}"
