#!/usr/bin/env bash
# Prepares .gpu-carry/, what benchmarks/gpu_device.sh needs on a lent GPU machine that the
# working tree does not hold (docs/gpu.md, "On a lent GPU"): the CoNLL-2003 files (gzipped) and
# GloVe vectors of ../shared/data (never committed: Reuters text), all-MiniLM-L6-v2's config and
# tokenizer, and wheels for Python 3.12 of the packages crftag and its tests need that the
# machine's image lacks or has at another version. Run it here, once, from the repository's root;
# git ignores the folder (.git/info/exclude). About 38 MB; with the working tree, what a call
# carries must stay under 64 MiB, which it checks.
set -euo pipefail
cd "$(dirname "$0")/.."
carry=.gpu-carry
minilm=runs/models/all-MiniLM-L6-v2
exclude=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file
mkdir -p "$(dirname "$exclude")" "$carry/data/conll2003" "$carry/data/glove" "$carry/wheels" \
    "$carry/models/all-MiniLM-L6-v2"
grep -qx "/$carry/" "$exclude" 2>/dev/null || echo "/$carry/" >>"$exclude"
for name in eng.train eng.testa eng.testb; do
    gzip -c "../shared/data/conll2003/$name" >"$carry/data/conll2003/$name.gz"
done
cp ../shared/data/glove/glove.6B.50d.100k.txt.gz "$carry/data/glove/"
# The encoder without its weights (87 MB, more than a call carries): benchmarks/gpu_encoder.py
# gives it random weights of the same architecture there, whose speed is the pretrained one's.
cp "$minilm"/config.json "$minilm"/tokenizer.json "$minilm"/tokenizer_config.json \
    "$minilm"/special_tokens_map.json "$carry/models/all-MiniLM-L6-v2/"
# The image has torch, numpy, typer, rich, pyyaml, tqdm, regex, scikit-learn, hypothesis,
# pytest(-xdist), onnx(runtime), matplotlib, prometheus-client, uvloop, and transformers 5.17.0,
# tokenizers 0.23.2, safetensors 0.8.0 and huggingface_hub 1.33.0 (/work/.library/device/
# KINDS.md): these are the rest (gensim is left out: 26 MB, and its tests skip without it).
PYTHON=${PYTHON:-.venv/bin/python}
# Pure Python: built here where only a source release exists (seqeval).
"$PYTHON" -m pip wheel -q --no-deps -w "$carry/wheels" \
    seqeval==1.2.2 segtok==1.5.11 pytorch-crf==0.7.2 nervaluate==1.2.1 jsonschema==4.26.0 \
    jsonschema-specifications referencing==0.37.0 optuna==5.0.0 alembic==1.20.1 \
    colorlog==6.12.0 mako==1.4.3 uvicorn==0.54.0
# The encoder's: transformers at the version crftag's tests pass with here. The image's
# tokenizers 0.23.2, safetensors 0.8.0 and huggingface_hub 1.33.0 satisfy it (crftag's encoder
# tests pass with transformers 5.24.0 over huggingface_hub 1.33.0), so they stay: a
# huggingface_hub 2 would need httpx2, which the image lacks, and a call carries 64 MiB at most.
"$PYTHON" -m pip download -q --no-deps -d "$carry/wheels" transformers==5.24.0
# Compiled: the machine's CPython 3.12 builds.
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$carry/wheels" \
    rpds-py sqlalchemy==2.1.9 greenlet httptools==0.9.0
du -sh "$carry"
# What a call carries: the working tree git would hand over, and this folder.
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null \
    | awk '$2 == "total" {sum += $1} END {print sum + 0}')
total=$((tree + $(du -sb "$carry" | cut -f1)))
echo "a call carries $((total / 1048576)) MiB of its 64 (working tree $((tree / 1048576)) MiB)"
[ "$total" -lt $((64 * 1048576)) ] || { echo "over the 64 MiB a call carries" >&2; exit 1; }
