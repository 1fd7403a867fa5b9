#!/usr/bin/env bash
# Prepares .gpu-carry/, what benchmarks/gpu_device.sh needs on a lent GPU machine that the
# working tree does not hold (docs/gpu.md, "On a lent GPU"): the CoNLL-2003 files and GloVe
# vectors of ../shared/data (never committed: Reuters text), and wheels for Python 3.12 of the
# packages crftag and its tests need that the machine's image lacks. Run it here, once, from the
# repository's root; git ignores the folder (.git/info/exclude). About 30 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
carry=.gpu-carry
mkdir -p .git/info "$carry/data/conll2003" "$carry/data/glove" "$carry/wheels"
grep -qx "/$carry/" .git/info/exclude 2>/dev/null || echo "/$carry/" >>.git/info/exclude
cp ../shared/data/conll2003/eng.train ../shared/data/conll2003/eng.testa \
    ../shared/data/conll2003/eng.testb "$carry/data/conll2003/"
cp ../shared/data/glove/glove.6B.50d.100k.txt.gz "$carry/data/glove/"
# The image has torch, numpy, typer, rich, pyyaml, tqdm, regex, scikit-learn, hypothesis,
# pytest(-xdist), onnx(runtime), matplotlib, prometheus-client, uvloop: these are the rest
# (gensim is left out: 26 MB, and its tests skip without it).
PYTHON=${PYTHON:-.venv/bin/python}
# Pure Python: built here where only a source release exists (seqeval).
"$PYTHON" -m pip wheel -q --no-deps -w "$carry/wheels" \
    seqeval==1.2.2 segtok==1.5.11 pytorch-crf==0.7.2 nervaluate==1.2.1 jsonschema==4.26.0 \
    jsonschema-specifications referencing==0.37.0 optuna==5.0.0 alembic==1.20.1 \
    colorlog==6.12.0 mako==1.4.3 uvicorn==0.54.0
# Compiled: the machine's CPython 3.12 builds.
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$carry/wheels" \
    rpds-py sqlalchemy==2.1.9 greenlet httptools==0.9.0
du -sh "$carry"
