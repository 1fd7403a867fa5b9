"""Tag sentences with any model through crftag's Python API: one text a line on stdin, each
entity out with its confidence.

    echo "John Smith lives in Berlin ." | python examples/tag_sentences.py -m en-ner

`-m` takes what `crftag predict -m` takes: a bundled name (en-ner, en-pos), a run directory, a
checkpoint (.pt), an export (.npz) or an ONNX graph (.onnx). `crftag.load` picks the backend
(NumPy for a bundled name or an export, without importing torch; ONNX Runtime for .onnx; torch
for a checkpoint), and every backend answers the same calls.
"""

import argparse
import sys

import crftag
from crftag.errors import CrftagError


def main() -> None:
    parser = argparse.ArgumentParser(description="Tag stdin's lines with a crftag model.")
    parser.add_argument("-m", "--model", default="en-ner")
    arguments = parser.parse_args()
    try:
        tagger = crftag.load(arguments.model, "cpu")
    except CrftagError as error:  # a missing file or one that holds no model
        sys.exit(f"tag_sentences.py: error: {error}")
    print(f"{tagger.source} on {tagger.backend}: {', '.join(tagger.labels)}", file=sys.stderr)
    texts = [line.strip() for line in sys.stdin if line.strip()]
    for text, record in zip(texts, tagger.predict(texts), strict=True):
        if not tagger.tags_are_spans:
            print(" ".join(f"{t}/{tag}" for t, tag in zip(record.tokens, record.tags, strict=True)))
            continue
        found = [f"{s['text']} {s['label']} {s['confidence']:.3f}" for s in record.spans]
        print(f"{text}\t{'; '.join(found)}")


if __name__ == "__main__":
    main()
