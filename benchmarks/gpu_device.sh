#!/usr/bin/env bash
# Everything a lent GPU machine runs for crftag, in one call of under 10 minutes (docs/gpu.md,
# "On a lent GPU"). From the repository's root there, with .gpu-carry/ carried
# (benchmarks/gpu_carry.sh made it here):
#   1. set-up, about 30 s: the carried wheels into /tmp/site, the C extensions built for the
#      machine's Python, ../shared/data pointed at the carried corpus (unzipped);
#   2. make bench-gpu's measurement with a 520 s limit (benchmarks/gpu.py): the machine, the CUDA
#      tests, configs/conll03_gpu.yaml trained to the end, eng.testb tagged at batch 1 and 1024,
#      then the encoder section in 120 s of it (all-MiniLM-L6-v2's architecture: extraction,
#      fine-tuning steps, tagging, the teacher's labelling; benchmarks/gpu_encoder.py);
#   3. torch.profiler over 10 training steps of the recipe on the GPU (benchmarks/gpu_profile.py),
#      if a minute is left;
#   4. the whole test suite, as `make test` runs it but on 15 workers, in the time left.
# Everything it writes goes to $OUT (what the device tool brings back): device.log, gpu.json,
# profile-cuda.txt, tests.log, tests.xml. Knobs, for trying it on a CPU first: DEVICE=cpu (the
# sample config, 2 epochs, the tests' tiny BERT), TESTS="tests/cuda" (part of the suite), WORKERS,
# PY (python3), WHEELS=0.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/bench/device}
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
TESTS=${TESTS:-tests}
WORKERS=${WORKERS:-15}
LIMIT_S=${LIMIT_S:-585}
mkdir -p "$OUT"
exec > >(tee "$OUT/device.log") 2>&1
export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1  # nothing outside the machine answers: never wait on the network

echo "== set-up ($(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
if [ "${WHEELS:-1}" = 1 ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .gpu-carry/wheels/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
"$PY" setup.py -q build_ext --inplace >/dev/null 2>&1 \
    || echo "C extensions not built: the CRF and the LSTMs run their NumPy and torch loops"
for packed in .gpu-carry/data/conll2003/*.gz; do
    [ -e "$packed" ] && gunzip -kf "$packed"
done
if [ ! -e ../shared/data ]; then
    mkdir -p ../shared && ln -s "$PWD/.gpu-carry/data" ../shared/data
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

echo "== bench-gpu (at $SECONDS s)"
bench=(--device "$DEVICE" --time-limit 520 --encoder-seconds 120 --json "$OUT/gpu.json")
profile=(--device "$DEVICE" --steps 10 --rows 30)
if [ "$DEVICE" = cpu ]; then
    bench+=(--config configs/sample.yaml --set train.epochs=2 --tag-sentences 50)
    bench+=(--encoder-config configs/sample.yaml --encoder-sentences 50)
    profile+=(configs/sample.yaml --steps 2)
else
    bench+=(--encoder .gpu-carry/models/all-MiniLM-L6-v2)
fi
timeout 550 "$PY" benchmarks/gpu.py "${bench[@]}"
echo "bench-gpu exit status $? (at $SECONDS s)"

left=$((LIMIT_S - SECONDS - 30))
echo "== profile, $left s left for it (at $SECONDS s)"
if [ "$left" -gt 30 ]; then
    timeout "$((left < 90 ? left : 90))" "$PY" benchmarks/gpu_profile.py "${profile[@]}" \
        --trace "$OUT/trace.json" >"$OUT/profile-cuda.txt" 2>&1
    echo "profile exit status $?"
    tail -n 12 "$OUT/profile-cuda.txt"
    gzip -f "$OUT/trace.json" 2>/dev/null
fi

left=$((LIMIT_S - SECONDS))
echo "== tests, $left s left (at $SECONDS s)"
if [ "$left" -gt 30 ]; then
    timeout "$left" "$PY" -m pytest -q -n "$WORKERS" -p no:cacheprovider --junitxml "$OUT/tests.xml" \
        $TESTS >"$OUT/tests.log" 2>&1
    echo "tests exit status $? (124: stopped by the time limit)"
    tail -n 25 "$OUT/tests.log"
fi
echo "== done at $SECONDS s"
