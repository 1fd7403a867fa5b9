"""How closely students reproduce their teacher: each model's tags scored against the
teacher's (entity F1, or token accuracy for tags that are not spans), on text the students
trained on and on text none of them saw.

    python benchmarks/distill_agreement.py --teacher RUN --store DIR --text FILE
        [--skip N] [--lines L] [--sample S] NAME=MODEL [NAME=MODEL ...]

The trained-on text is every ``len(store) // S``-th sentence of the teacher's store (``crftag
distill``'s ``DIR/teacher`` folder, S of them); the unseen text is the sentences of lines
N+1 to N+L of FILE, read as ``crftag distill`` reads text, less the store's own sentences (pass
an N past the lines the store took). A student that scores well on the first and badly on the
second has learnt the teacher's answers without its reasons (more text would help); one that
scores badly on both cannot follow the teacher at all (its network, or its training, is the
limit). Prints one JSON object a model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import crftag  # noqa: E402
from crftag.data.unlabelled_text import read_unlabelled_text  # noqa: E402
from crftag.inference.teacher_store import open_store  # noqa: E402
from crftag.scoring.evaluate import headline, score  # noqa: E402


def unseen_sentences(text: str, skip: int, lines: int, seen: set) -> list[tuple[str, ...]]:
    """The sentences of lines ``skip + 1`` to ``skip + lines`` of ``text``, not in ``seen``."""
    with tempfile.TemporaryDirectory() as folder:
        part = os.path.join(folder, "part.txt")
        with open(text, encoding="utf-8") as source, open(part, "w", encoding="utf-8") as out:
            out.writelines(itertools.islice(source, skip, skip + lines))
        return list(read_unlabelled_text([part], seen).sentences)


def agreement(teacher, models: dict, sentences: list) -> dict[str, float]:
    """Each model's headline score (entity F1 or accuracy, in percent) against the teacher's
    tags of ``sentences``."""
    reference = teacher.tag(sentences)
    spans = teacher.tags_are_spans
    return {
        name: round(100 * headline(score(reference, model.tag(sentences), tags_are_spans=spans)), 2)
        for name, model in models.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="NAME=MODEL, each a student (or any model)")
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--store", required=True, help="the teacher's store the students read")
    parser.add_argument("--text", required=True, help="the text the store's lines came from")
    parser.add_argument("--skip", type=int, default=60_000, help="lines before the unseen ones")
    parser.add_argument("--lines", type=int, default=1_500)
    parser.add_argument("--sample", type=int, default=2_000, help="store sentences scored")
    args = parser.parse_args()
    store = open_store(args.store)
    step = max(1, len(store) // args.sample)
    trained_on = [store.sentence(i) for i in range(0, len(store), step)][: args.sample]
    seen = {tuple(store.sentence(i)) for i in range(len(store))}
    unseen = unseen_sentences(args.text, args.skip, args.lines, seen)
    teacher = crftag.load(args.teacher)
    models = {name: crftag.load(path) for name, path in (m.split("=", 1) for m in args.models)}
    for what, sentences in (("trained on", trained_on), ("unseen", unseen)):
        found = agreement(teacher, models, sentences)
        print(json.dumps({"text": what, "sentences": len(sentences), **found}), flush=True)


if __name__ == "__main__":
    main()
