"""docs/active-learning.md's loop, run as written on the bundled NER sample: a seed model,
two rounds of select, annotate, convert and retrain from the previous round. The annotator is
the one thing replaced: it accepts the model's pre-annotations."""

import json
import os
import re
import subprocess
import sys

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.inference.loading import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(ROOT, "docs", "active-learning.md")
ACCEPTING_ANNOTATOR = 'annotate() { cp "$1" "$2"; }'
SPEC = ColumnSpec("conll", 0, -1)


def guide_script() -> str:
    with open(GUIDE, encoding="utf-8") as stream:
        blocks = re.findall(r"```sh\n(.*?)```", stream.read(), flags=re.DOTALL)
    [script] = [block for block in blocks if "crftag select" in block]
    replaced, count = re.subn(r"annotate\(\) \{.*?\n\}", ACCEPTING_ANNOTATOR, script, flags=re.S)
    assert count == 1, "the guide's annotate step is no longer one shell function"
    return replaced


def write_fixture(directory) -> None:
    """A seed of 40 labelled sample sentences, a pool of 60 others as text lines, and the tiny
    model's config."""
    train = read_corpus(os.path.join(ROOT, "data", "ner_sample.train.conll"), SPEC)
    with open(directory / "seed.conll", "w", encoding="utf-8") as stream:
        for sentence in train[:40]:
            rows = zip(sentence.tokens, sentence.tags, strict=True)
            stream.write("".join(f"{w} {t}\n" for w, t in rows) + "\n")
    pool = train[40:100]
    (directory / "pool.txt").write_text("".join(" ".join(s.tokens) + "\n" for s in pool))
    dev = os.path.join(ROOT, "data", "ner_sample.dev.conll")
    (directory / "ner.yaml").write_text(
        f"data:\n  train: seed.conll\n  dev: {dev}\n"
        "model:\n  word_dim: 16\n  char_encoder: cnn\n  hidden_size: 16\n"
        "train:\n  optimizer: adam\n  lr: 0.01\n  epochs: 2\n  batch_size: 8\n"
    )


def test_the_guide_loop_runs_end_to_end(tmp_path):
    write_fixture(tmp_path)
    environment = {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        "N": "4",
        "ROUNDS": "2",
    }
    done = subprocess.run(
        ["bash", "-c", guide_script()],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    for round_number in range(3):
        assert (tmp_path / "runs" / f"round{round_number}" / "model.pt").exists()
    rounds = [
        [json.loads(line) for line in (tmp_path / "rounds" / f"{n}.selected.jsonl").open()]
        for n in (1, 2)
    ]
    assert [len(selected) for selected in rounds] == [4, 4]
    assert not {r["id"] for r in rounds[0]} & {r["id"] for r in rounds[1]}
    labelled = (tmp_path / "rounds" / "labelled.jsonl").read_text().splitlines()
    assert len(labelled) == 8
    # The last model learnt from the annotated sentences: their words are in its vocabulary.
    seed_words = {w for s in read_corpus(str(tmp_path / "seed.conll"), SPEC) for w in s.tokens}
    annotated = {w for line in labelled for w in json.loads(line)["tokens"]}
    new_words = {w for w in annotated - seed_words if not any(c.isdigit() for c in w)}
    words = load(str(tmp_path / "runs" / "round2"), "cpu").vocabularies.words
    assert new_words and all(word in words.symbols for word in new_words)
