"""Model cards: a model scored on its task's dev and test files, as written and perturbed, with
what its file says of where it comes from.

    python benchmarks/model_card.py en-ner=en-ner en-pos=en-pos --record
                                                      (make model-cards RECORD=1)
    python benchmarks/model_card.py student=runs/distill/student --against en-ner
                                                      (a candidate, against the bundled card)

Each NAME=MODEL takes as MODEL what `crftag eval -m` takes (a bundled name, a run directory, a
checkpoint, an export). The task comes from the model: a model of spans (entities) is scored on
CoNLL-2003 `eng.testa` (dev) and `eng.testb` (test), entity precision, recall and F1 overall
and per type; a model of one tag per token on UD English-EWT dev and test, token accuracy
overall and per genre (the prefix of each sentence's `# sent_id`: answers, email, newsgroup,
reviews, weblog). Each file is scored as written and on each perturbed copy `crftag eval
--perturb lower,upper,title,typos --seed SEED` scores (crftag/data/perturb.py, eval's typo rate),
in this process, through the functions `crftag eval` scores with, on the CPU.

The card of NAME records the model file (its kind and size in bytes), its config with the
file paths cut to their names, its stored metrics and distillation record, whether each scored
file was held out of its training (a file it was trained or chosen on is not), the seed, the
date and the commit (benchmarks/provenance.py). Cards go into runs/bench/model_cards.json, or
with --record benchmarks/results/model_cards.json (benchmarks/output.py), keyed by NAME, the
other names' cards kept, so a candidate's card sits beside the bundled model's. docs/models/
quotes the bundled models' cards (`split_section`, `file_line`, `stamp`).

`--against NAME` compares each new card with the card recorded under NAME, score by score on
dev as the cards show them (percent, two decimals): the scores a new card misses are listed on
stderr and the command exits 1 (a candidate replaces a bundled model only if level with it or
above on every one).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from benchmarks.provenance import commit  # noqa: E402
from crftag.data.conll import ColumnSpec, Sentence, read_columns  # noqa: E402
from crftag.data.lines import open_binary  # noqa: E402
from crftag.data.perturb import PERTURBATIONS, perturb_sentences  # noqa: E402
from crftag.errors import CrftagError, located  # noqa: E402
from crftag.scoring.evaluate import score, score_tagged, tag_sentences, unseen_labels  # noqa: E402
from crftag.scoring.files import gold_sentences  # noqa: E402
from crftag.scoring.robustness import DEFAULT_TYPO_RATE  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")
RESULTS_NAME = "model_cards.json"
AS_WRITTEN = "as written"
FORMS = (AS_WRITTEN, *PERTURBATIONS)
AVERAGES = ("micro", "macro", "weighted")  # the entity scores' keys that are no type


class Corpus(NamedTuple):
    """A task's scored files: their ``format`` and paths by split (``dev``, ``test``)."""

    format: str
    files: dict[str, str]


CORPORA = {
    "ner": Corpus(
        "conll",
        {
            "dev": os.path.join(DATA, "conll2003", "eng.testa"),
            "test": os.path.join(DATA, "conll2003", "eng.testb"),
        },
    ),
    "pos": Corpus(
        "conllu",
        {
            "dev": os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-dev.conllu"),
            "test": os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-test.conllu"),
        },
    ),
}


def sentence_genres(path: str, gold: list[Sentence]) -> list[str]:
    """Each sentence's genre, the prefix of its ``# sent_id`` up to the first ``-`` (EWT's
    ``weblog-blogspot.com_...-0001`` is ``weblog``); a sentence without one is an error."""
    spec = ColumnSpec.for_format("conllu")
    with open_binary(path) as stream:
        described = list(read_columns(stream, path, spec, keep_raw=True))
    assert [s.line for s in described] == [s.line for s in gold], "one reading of the file"
    genres = []
    for sentence in described:
        ids = [line.split("=", 1)[1].strip() for line in sentence.raw if _is_sent_id(line)]
        if not ids or not ids[0].split("-", 1)[0]:
            raise located(
                path, sentence.line, "no '# sent_id = GENRE-...' comment to tell its genre"
            )
        genres.append(ids[0].split("-", 1)[0])
    return genres


def _is_sent_id(line: str) -> bool:
    return line.startswith("#") and line[1:].split("=", 1)[0].strip() == "sent_id"


def form_scores(tagger, sentences: list[Sentence], genres: list[str] | None) -> dict:
    """``tagger``'s scores on ``sentences`` (fractions): for spans, micro ``precision``,
    ``recall``, ``f1`` and each gold or predicted type's (``types``); for tags, ``genres``'
    accuracy and token count; token ``accuracy`` for both. ``support``: gold spans."""
    tagged = tag_sentences(tagger, sentences)
    scores = score_tagged(sentences, tagged, tags_are_spans=tagger.tags_are_spans)
    result = {"accuracy": scores["accuracy"]}
    entities = scores.get("entities")
    if entities is not None:
        micro = entities["micro"]
        result |= {key: micro[key] for key in ("precision", "recall", "f1", "support")}
        result["types"] = {
            label.removeprefix("type:"): row
            for label, row in entities.items()
            if label not in AVERAGES
        }
    if genres is not None:
        result["genres"] = {}
        for genre in sorted(set(genres)):
            chosen = [i for i, name in enumerate(genres) if name == genre]
            part = score(
                [sentences[i].tags for i in chosen],
                [tagged.tags[i] for i in chosen],
                tags_are_spans=False,
            )
            result["genres"][genre] = {"accuracy": part["accuracy"], "tokens": part["tokens"]}
    return result


def file_scores(tagger, path: str, corpus: Corpus, seed: int) -> dict:
    """One file's scores in every form (as written and each perturbed copy, drawn from
    ``seed`` as `crftag eval --perturb --seed` draws them), with its size."""
    gold = gold_sentences(tagger, path, data_format=corpus.format)
    unseen = unseen_labels(tagger, gold)
    if unseen:
        raise CrftagError(
            f"{path}: the model never saw the labels {', '.join(unseen)}: a model of another "
            "label set cannot be scored on this corpus"
        )
    genres = None if tagger.tags_are_spans else sentence_genres(path, gold)
    forms = {AS_WRITTEN: form_scores(tagger, gold, genres)}
    for change in PERTURBATIONS:
        copy = perturb_sentences(gold, change, seed=seed, typo_rate=DEFAULT_TYPO_RATE)
        forms[change] = form_scores(tagger, copy, genres)
    return {
        "file": os.path.basename(path),
        "sentences": len(gold),
        "tokens": sum(len(sentence.tokens) for sentence in gold),
        "forms": forms,
    }


def held_out(config, path: str) -> str:
    """How ``path`` stands to the model's training: ``trained on`` (one of ``data.train``),
    ``chosen on`` (its ``data.dev``) or ``held out``. Files are told apart by name, as the
    config's paths are the training machine's."""
    name = os.path.basename(path)
    train = config.data.train
    trained = [train] if isinstance(train, str) else list(train or [])
    if name in {os.path.basename(file) for file in trained}:
        return "trained on"
    if config.data.dev and os.path.basename(config.data.dev) == name:
        return "chosen on"
    return "held out"


def names_only(value):
    """``value`` (a config's plain values) with every absolute path cut to its file name."""
    if isinstance(value, dict):
        return {key: names_only(item) for key, item in value.items()}
    if isinstance(value, list):
        return [names_only(item) for item in value]
    if isinstance(value, str) and os.path.isabs(value):
        return os.path.basename(value)
    return value


def provenance(tagger, path: str, kind: str) -> dict:
    """What the model file says of itself: its kind and size, its config (paths cut to names;
    no search space of `crftag tune`), stored metrics, schemes, int8 weights and distillation
    record (a teacher, or None)."""
    described = getattr(tagger, "metadata", None)  # an export's description
    if described is None:
        from crftag.modelfiles.checkpoint_files import read_checkpoint

        described = read_checkpoint(path)
    config = {k: v for k, v in tagger.config.to_dict().items() if k != "tune"}
    return {
        "file": os.path.relpath(path, ROOT) if kind == "bundled" else path,
        "kind": kind,
        "bytes": os.path.getsize(path),
        "crftag_version": described.get("crftag_version"),
        "config": names_only(config),
        "metrics": described.get("metrics", {}),
        "data_scheme": tagger.data_scheme,
        "train_scheme": tagger.train_scheme,
        "int8_weights": list(described.get("quantized", [])),
        "distillation": described.get("distillation"),
    }


def measure(model: str, *, seed: int) -> dict:
    """The card of ``model`` (what ``-m`` takes): its provenance and its scores on its task's
    dev and test files, as written and perturbed, loaded on the CPU as `crftag eval --device
    cpu` loads it."""
    from crftag.inference.loading import load
    from crftag.modelfiles.kinds import model_file

    found = model_file(model)
    tagger = load(model, "cpu")
    task = "ner" if tagger.tags_are_spans else "pos"
    corpus = CORPORA[task]
    splits = {}
    for split, path in corpus.files.items():
        splits[split] = file_scores(tagger, path, corpus, seed)
        splits[split]["held_out"] = held_out(tagger.config, path)
    return {
        "model": model,
        "task": task,
        "score": "entity F1" if task == "ner" else "token accuracy",
        "seed": seed,
        "typo_rate": DEFAULT_TYPO_RATE,
        "provenance": provenance(tagger, found.path, found.kind),
        "splits": splits,
    }


def per_cent(fraction: float) -> str:
    return f"{100 * fraction:.2f}"


def card_rows(card: dict, split: str) -> tuple[list[str], list[tuple[str, int, list[float]]]]:
    """Every score of the card on ``split`` (fractions), as (column names, rows): for entities
    a row per type after the overall one, its support, then precision and recall as written
    and F1 in every form; for tags a row per genre after the overall one, its tokens, then
    accuracy in every form."""
    scores = card["splits"][split]
    forms = scores["forms"].values()
    written = scores["forms"][AS_WRITTEN]
    if card["task"] != "ner":
        columns = ["accuracy as written", *FORMS[1:]]
        rows = [("overall", scores["tokens"], [form["accuracy"] for form in forms])]
        for genre, row in written["genres"].items():
            accuracies = [form["genres"][genre]["accuracy"] for form in forms]
            rows.append((genre, row["tokens"], accuracies))
        return columns, rows
    columns = ["P", "R", "F1 as written", *FORMS[1:]]
    rows = [("overall", written["support"], [written["precision"], written["recall"]])]
    rows[0][2].extend(form["f1"] for form in forms)
    for label, row in sorted(written["types"].items()):
        # A type predicted as written but in no copy's gold or predicted tags scores 0 there.
        f1s = [form["types"].get(label, {}).get("f1", 0.0) for form in forms]
        rows.append((label, row["support"], [row["precision"], row["recall"], *f1s]))
    return columns, rows


def score_table(card: dict, split: str) -> str:
    """The card's scores on ``split`` (:func:`card_rows`) as a Markdown table, in percent."""
    columns, rows = card_rows(card, split)
    first = ["entities", "support"] if card["task"] == "ner" else ["genre", "tokens"]
    lines = [
        "| " + " | ".join(first + columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for label, count, figures in rows:
        cells = [label, f"{count:,}", *(per_cent(figure) for figure in figures)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scores_below(candidate: dict, reference: dict, split: str = "dev") -> list[str]:
    """The scores of ``reference``'s card on ``split`` that ``candidate``'s misses, each as
    ``"ORG lower: 92.01 < 92.33"``, compared as the cards show them (percent, two decimals);
    a row the candidate lacks misses every score. Cards of other files or settings are
    refused."""
    settings = ("task", "seed", "typo_rate")
    sizes = ("file", "sentences", "tokens")
    if [candidate[key] for key in settings] != [reference[key] for key in settings] or [
        candidate["splits"][split][key] for key in sizes
    ] != [reference["splits"][split][key] for key in sizes]:
        raise CrftagError(
            f"the cards of {candidate['model']} and {reference['model']} are not of the same "
            f"{split} file, task, seed and typo rate"
        )
    columns, rows = card_rows(reference, split)
    found = {label: figures for label, _, figures in card_rows(candidate, split)[1]}
    below = []
    for label, _, figures in rows:
        theirs = found.get(label, [0.0] * len(figures))
        for column, mine, other in zip(columns, theirs, figures, strict=True):
            if per_cent(mine) != per_cent(other) and mine < other:
                below.append(f"{label} {column}: {per_cent(mine)} < {per_cent(other)}")
    return below


HELD_OUT_WORDS = {
    "trained on": "not held out: the model was trained on it",
    "chosen on": "not held out: the model was chosen on it",
    "held out": "held out",
}


def split_section(card: dict, split: str) -> str:
    """A card's section of ``split``: a heading naming the file, its size and whether it was
    held out, then :func:`score_table`."""
    scores = card["splits"][split]
    heading = (
        f"### {split}: `{scores['file']}`, {scores['sentences']:,} sentences, "
        f"{scores['tokens']:,} tokens ({HELD_OUT_WORDS[scores['held_out']]})"
    )
    return f"{heading}\n\n{score_table(card, split)}"


def file_line(card: dict) -> str:
    """The model file as a card names it: its path, kind and size."""
    described = card["provenance"]
    return f"`{described['file']}` ({described['kind']}, {described['bytes']:,} bytes)"


def stamp(card: dict) -> str:
    """When, at which commit and how the card was measured, as a card quotes it."""
    return (
        f"measured {card['date']} at {card['commit']} with `{card['command']}` (seed "
        f"{card['seed']}, typos in {100 * card['typo_rate']:g}% of the words of 4 letters or more)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="NAME=MODEL", help="a card's name and model")
    parser.add_argument("--seed", type=int, default=1, help="the seed of the perturbed copies")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    parser.add_argument(
        "--against",
        metavar="NAME",
        help="the recorded card each new card must be level with on every dev score; the "
        "scores it misses are listed and the command exits 1",
    )
    output.add_record_option(parser)
    options = parser.parse_args(argv)
    pairs = [item.split("=", 1) for item in options.models]
    if any(len(pair) != 2 or not all(pair) for pair in pairs):
        parser.error("expected NAME=MODEL, with what `crftag eval -m` takes as MODEL")
    given = " ".join(argv if argv is not None else sys.argv[1:])
    common = {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),  # before the long run: commits may follow
        "command": f"python benchmarks/model_card.py {given}",
    }
    cards = {}
    try:
        reference = recorded_card(options.against, options.record, options.json)
        for name, model in pairs:
            cards[name] = measure(model, seed=options.seed) | common
        misses = {
            name: scores_below(card, reference)
            for name, card in cards.items()
            if reference is not None
        }
    except CrftagError as error:
        print(f"model_card.py: error: {error}", file=sys.stderr)
        return 2
    path = output.merge_entries(RESULTS_NAME, cards, options.record, options.json)
    for name, card in cards.items():
        for split in card["splits"]:
            print(f"{name}, {split} ({card['splits'][split]['file']}):")
            print(score_table(card, split))
    print(f"written to {os.path.relpath(path, ROOT)}", file=sys.stderr)
    return _verdicts(misses, options.against)


def recorded_card(name: str | None, record: bool, json_path: str | None) -> dict | None:
    """The card kept under ``name`` in the results file a run merges into (None: no name)."""
    if name is None:
        return None
    path = json_path or output.previous_path(RESULTS_NAME, record)
    cards = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            cards = json.load(handle)
    if name not in cards:
        raise CrftagError(f"{path}: no card named {name} (it holds {', '.join(cards) or 'none'})")
    return cards[name]


def _verdicts(misses: dict[str, list[str]], against: str | None) -> int:
    """Each new card's verdict against ``against`` on stderr; 1 if any misses a score."""
    for name, below in misses.items():
        if not below:
            print(f"{name}: level with or above {against} on every dev score", file=sys.stderr)
            continue
        print(f"{name}: below {against} on {len(below)} dev scores:", file=sys.stderr)
        for line in below:
            print(f"  {line}", file=sys.stderr)
    return 1 if any(misses.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
