"""A CRFsuite feature CRF on the same split, the baseline crftag's feature CRF is compared with.

    python benchmarks/crfsuite_baseline.py [--train ...] [--dev ...] [--test ...]

The features are those of the sklearn-crfsuite CoNLL tutorial, without part-of-speech tags
(crftag's feature CRF sees only the words): the lower-cased word, its last two and three
characters, whether it is upper case, title case or digits, and the same for the words at -1 and
+1, with beginning and end of sentence markers. Trained with L-BFGS, c1 = 0.1, c2 = 0.1 and 100
iterations, the tutorial's settings, on IOB2 tags; scored like `crftag eval` (seqeval default
mode). Needs python-crfsuite (`pip install -e '.[bench]'`), a benchmark-only dependency.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import pycrfsuite

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.data.schemes import convert  # noqa: E402
from crftag.scoring.evaluate import score  # noqa: E402

CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")


def word_features(sentence: list[str], i: int) -> list[str]:
    word = sentence[i]
    features = [
        "bias",
        "word.lower=" + word.lower(),
        "word[-3:]=" + word[-3:],
        "word[-2:]=" + word[-2:],
        f"word.isupper={word.isupper()}",
        f"word.istitle={word.istitle()}",
        f"word.isdigit={word.isdigit()}",
    ]
    for offset, name in ((-1, "-1"), (1, "+1")):
        j = i + offset
        if 0 <= j < len(sentence):
            other = sentence[j]
            features += [
                f"{name}:word.lower=" + other.lower(),
                f"{name}:word.istitle={other.istitle()}",
                f"{name}:word.isupper={other.isupper()}",
            ]
        else:
            features.append("BOS" if offset < 0 else "EOS")
    return features


def read(path: str) -> list[tuple[list[str], list[str]]]:
    sentences = read_corpus(path, ColumnSpec())
    return [(list(s.tokens), convert(s.tags, "iob2")) for s in sentences]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=os.path.join(CONLL, "eng.train"))
    parser.add_argument("--dev", default=os.path.join(CONLL, "eng.testa"))
    parser.add_argument("--test", default=os.path.join(CONLL, "eng.testb"))
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args()
    args.json = args.json or output.result_path("crfsuite_baseline.json", args.record)

    started = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    for tokens, tags in read(args.train):
        trainer.append([word_features(tokens, i) for i in range(len(tokens))], tags)
    trainer.set_params(
        {
            "c1": 0.1,
            "c2": 0.1,
            "max_iterations": args.iterations,
            "feature.possible_transitions": True,
        }
    )
    with tempfile.TemporaryDirectory() as directory:
        model_path = os.path.join(directory, "model.crfsuite")
        trainer.train(model_path)
        train_seconds = time.perf_counter() - started
        tagger = pycrfsuite.Tagger()
        tagger.open(model_path)
        report = {"train_seconds": train_seconds, "iterations": args.iterations}
        for name, path in (("dev", args.dev), ("test", args.test)):
            sentences = read(path)
            predicted = [
                tagger.tag([word_features(tokens, i) for i in range(len(tokens))])
                for tokens, _ in sentences
            ]
            scores = score([tags for _, tags in sentences], predicted, tags_are_spans=True)
            report[name] = scores["entities"]["micro"]["f1"]
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    print(
        f"CRFsuite baseline: dev F1 {100 * report['dev']:.2f}, test F1 {100 * report['test']:.2f}, "
        f"trained in {train_seconds:.0f} s"
    )


if __name__ == "__main__":
    main()
