"""fastText vectors of a corpus's domain, for the ``vectors`` and ``all`` rows of
benchmarks/your_data.py: the stand-in for the vector file a user of that domain downloads.

    python benchmarks/domain_vectors.py TEXT -o VECTORS.bin [--dim 100] [--epochs 5]
        [--min-count 3] [--seed 1]

TEXT is one sentence or tweet a line, as ``benchmarks/char_lm_text.py`` writes it (dev and test
sentences already removed); each line is split into tokens by crftag's tokenizer, as
``crftag predict`` splits raw text (BC5CDR's text is tokenized already, and stays as it is).
Trains gensim's fastText skip-gram (Bojanowski et al. 2017; character n-grams of 3 to 6) on one
thread, so a seed gives the same file, and writes it in Facebook's ``.bin`` format, which
``model.embeddings`` reads with its n-gram table: a training word the file does not list still
gets a vector. Needs gensim (``pip install gensim``; it is in crftag's ``test`` extra). Reports
the tokens, the words kept and the minutes on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from crftag.data.tokenize import tokenize  # noqa: E402


def tokenized_lines(path: str) -> list[list[str]]:
    """The non-blank lines of ``path``, each split by crftag's tokenizer."""
    with open(path, encoding="utf-8") as handle:
        return [tokenize(line) for line in handle if line.strip()]


def train_vectors(sentences: list[list[str]], dim: int, epochs: int, min_count: int, seed: int):
    """A gensim FastText skip-gram model of ``sentences``, trained on one thread."""
    try:
        from gensim.models import FastText
    except ImportError:
        sys.exit("error: domain_vectors.py needs gensim: pip install gensim")
    model = FastText(
        vector_size=dim, sg=1, min_count=min_count, min_n=3, max_n=6, seed=seed, workers=1
    )
    model.build_vocab(corpus_iterable=sentences)
    model.train(corpus_iterable=sentences, total_examples=len(sentences), epochs=epochs)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text", help="One sentence or tweet a line.")
    parser.add_argument("-o", "--output", required=True, help="The .bin file to write.")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--min-count", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    started = time.perf_counter()
    sentences = tokenized_lines(options.text)
    model = train_vectors(sentences, options.dim, options.epochs, options.min_count, options.seed)
    from gensim.models.fasttext import save_facebook_model

    save_facebook_model(model, options.output)
    tokens = sum(len(sentence) for sentence in sentences)
    print(
        f"{options.output}: {len(model.wv)} words of {tokens} tokens in {len(sentences)} lines, "
        f"{options.dim} dimensions, {(time.perf_counter() - started) / 60:.1f} minutes",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
