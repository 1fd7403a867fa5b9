"""The files of a teacher's store, and reading a store back (:class:`TeacherStore`).

``manifest.json`` says what was labelled (the teacher and text with their SHA-256 digests, the
dev and test sentences removed, the temperature, the teacher's tags) and holds each written
shard's SHA-256. A shard ``shard-NNNNN.npz`` holds, for its n sentences of N tokens in all:

    lengths               (n,) int32      each sentence's tokens
    tokens                (bytes,) uint8  the sentences' tokens as UTF-8 JSON, a list of lists
    token_marginals       (N, K) float16  p(y_t = k | x), the sentences one after the other
    transition_marginals  (n, K, K) float32  sum over t of p(y_{t-1} = i, y_t = j | x)
    viterbi               (N,) int16      the teacher's best path, as tag ids

A store is opened only whole, unchanged and of this format: anything else is one line naming the
folder or the shard.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Sequence

import numpy as np

from crftag.errors import CrftagError, json_mistake
from crftag.inference.teacher import TeacherLabels

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "TeacherStore",
    "check_identity",
    "open_store",
    "read_manifest",
    "shard_bytes",
    "shard_name",
]

FORMAT = "crftag-teacher-store"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
_ARRAYS = {
    "lengths": np.int32,
    "tokens": np.uint8,
    "token_marginals": np.float16,
    "transition_marginals": np.float32,
    "viterbi": np.int16,
}
# What differs between a store and what is asked of it, as the refusal says it.
_IDENTITY = {
    "teacher_digest": "holds the labels of another teacher ({teacher})",
    "text_digest": "holds the labels of another text",
    "exclusion_digest": "was labelled with other dev and test sentences removed",
    "temperature": "was labelled at temperature {temperature}",
    "labels": "holds the labels of another tag set",
}


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.npz"


def shard_bytes(sentences: Sequence[Sequence[str]], labels: TeacherLabels) -> bytes:
    """One shard's file, as bytes: the sentences and what the teacher said of each."""
    tokens = json.dumps([list(sentence) for sentence in sentences], ensure_ascii=False)
    arrays = {
        "lengths": np.array([len(sentence) for sentence in sentences], dtype=np.int32),
        "tokens": np.frombuffer(tokens.encode("utf-8"), dtype=np.uint8),
        "token_marginals": np.concatenate(labels.token_marginals).astype(np.float16),
        "transition_marginals": labels.transition_marginals.astype(np.float32),
        "viterbi": np.concatenate(labels.viterbi).astype(np.int16),
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def read_manifest(store_dir: str) -> dict:
    """The manifest of the store in ``store_dir``, its format and version checked."""
    path = os.path.join(store_dir, MANIFEST)
    if not os.path.isfile(path):
        raise CrftagError(f"{store_dir}: no teacher store here (no {MANIFEST})")
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except UnicodeDecodeError:
        raise CrftagError(f"{path}: damaged (not UTF-8); label the text again") from None
    except ValueError as error:
        raise CrftagError(
            f"{path}: damaged ({json_mistake(error)}); label the text again"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CrftagError(f"{path}: not a crftag teacher store's manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CrftagError(
            f"{store_dir}: a teacher store of format {manifest.get('format_version')!r}; this "
            f"crftag reads format {FORMAT_VERSION}: label the text again into a new folder"
        )
    wrong = [name for name, holds in _FIELDS.items() if not holds(manifest.get(name))]
    if not wrong and sum(manifest["shard_sizes"]) != manifest["sentences"]:
        wrong.append("shard_sizes")
    if not wrong and len(manifest["shard_digests"]) > len(manifest["shard_sizes"]):
        wrong.append("shard_digests")
    if wrong:
        raise CrftagError(f"{path}: damaged ({', '.join(wrong)}); label the text again")
    return manifest


def _all(kind: type, *, positive: bool = False):
    """Whether a value is a list of ``kind`` (positive numbers, if so asked)."""
    return lambda value: (
        isinstance(value, list)
        and all(_is(kind, item) and (not positive or item > 0) for item in value)
    )


def _is(kind: type, value) -> bool:
    """isinstance, where a bool is no int."""
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


# Each field of a manifest past its format, and what it must hold.
_FIELDS = {
    "teacher": lambda value: _is(str, value),
    "teacher_digest": lambda value: _is(str, value),
    "text_files": _all(str),
    "text_digest": lambda value: _is(str, value),
    "exclusion_digest": lambda value: _is(str, value),
    "temperature": lambda value: _is(float, value) and 0 < value < float("inf"),
    "labels": _all(str),
    "scheme": lambda value: _is(str, value),
    "sentences": lambda value: _is(int, value) and value > 0,
    "sentences_digest": lambda value: _is(str, value),
    "removed": lambda value: _is(int, value) and value >= 0,
    "shard_sizes": _all(int, positive=True),
    "shard_digests": _all(str),
    "complete": lambda value: _is(bool, value),
}


def check_identity(store_dir: str, manifest: dict, expected: dict) -> None:
    """A one-line error naming ``store_dir`` where the manifest's teacher, text, removed
    sentences, temperature or tags differ from those ``expected`` (keys left out are not
    checked)."""
    for key, problem in _IDENTITY.items():
        if key in expected and manifest.get(key) != expected[key]:
            raise CrftagError(
                f"{store_dir}: the teacher store {problem.format(**manifest)}; give another "
                "folder, or remove this one to label again"
            )


class TeacherStore:
    """A finished store, read whole into memory: the sentences and the teacher's labels.

    teacher_digest, text_digest  SHA-256 of the teacher's model file and of the text files
    labels       the teacher's tags, in its CRF's order (tag id i is ``labels[i]``)
    scheme       the tag scheme of those tags (``none`` for one label per token)
    temperature  the temperature the marginals were computed at
    removed      how many sentences of the text were removed as equal to dev or test ones
    """

    def __init__(self, manifest: dict, sentences: list[tuple[str, ...]], arrays: dict) -> None:
        self.manifest = manifest
        self.teacher_digest: str = manifest["teacher_digest"]
        self.text_digest: str = manifest["text_digest"]
        self.labels: list[str] = list(manifest["labels"])
        self.scheme: str = manifest["scheme"]
        self.temperature: float = float(manifest["temperature"])
        self.removed: int = int(manifest["removed"])
        self._sentences = sentences
        self._offsets = np.concatenate([[0], np.cumsum(arrays["lengths"], dtype=np.int64)])
        self._token_marginals = arrays["token_marginals"]  # (N, K) float16
        self._transition_marginals = arrays["transition_marginals"]  # (n, K, K) float32
        self._viterbi = arrays["viterbi"]  # (N,) int16
        for array in arrays.values():
            array.flags.writeable = False

    def __len__(self) -> int:
        return len(self._sentences)

    def sentence(self, i: int) -> tuple[str, ...]:
        """The tokens of sentence ``i``."""
        return self._sentences[i]

    def marginals(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Sentence ``i``'s token marginals (T, K) float32 and its transition marginals summed
        over the sentence (K, K) float32."""
        first, last = self._offsets[i], self._offsets[i + 1]
        return self._token_marginals[first:last].astype(np.float32), self._transition_marginals[i]

    def viterbi(self, i: int) -> list[str]:
        """The teacher's best tag sequence for sentence ``i``, as its tags (``labels``)."""
        first, last = self._offsets[i], self._offsets[i + 1]
        return [self.labels[tag] for tag in self._viterbi[first:last].tolist()]


def open_store(
    store_dir: str, *, teacher_digest: str | None = None, text_digest: str | None = None
) -> TeacherStore:
    """The finished store in ``store_dir``. A store of another teacher or text (where their
    digests are given), of another format version, unfinished, or with a shard missing,
    damaged or changed since it was written is a one-line error naming the folder or shard."""
    manifest = read_manifest(store_dir)
    expected = {"teacher_digest": teacher_digest, "text_digest": text_digest}
    check_identity(store_dir, manifest, {k: v for k, v in expected.items() if v is not None})
    sizes, digests = manifest["shard_sizes"], manifest["shard_digests"]
    if not manifest["complete"] or len(digests) != len(sizes):
        raise CrftagError(
            f"{store_dir}: the teacher store is unfinished ({len(digests)} of {len(sizes)} "
            "shards); run the labelling again to finish it"
        )
    sentences: list[tuple[str, ...]] = []
    parts: dict[str, list[np.ndarray]] = {name: [] for name in _ARRAYS}
    for index, (size, digest) in enumerate(zip(sizes, digests, strict=True)):
        path = os.path.join(store_dir, shard_name(index))
        shard_sentences, arrays = _read_shard(path, digest, size, len(manifest["labels"]))
        sentences += shard_sentences
        for name, array in arrays.items():
            parts[name].append(array)
    arrays = {name: np.concatenate(parts[name]) for name in _ARRAYS if name != "tokens"}
    return TeacherStore(manifest, sentences, arrays)


def _read_shard(path: str, digest: str, size: int, num_tags: int):
    """(sentences, arrays) of one shard, its bytes checked against the manifest's digest and
    its arrays against each other."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise CrftagError(
            f"{path}: cannot read the teacher store's shard ({error.strerror})"
        ) from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise CrftagError(
            f"{path}: damaged or changed since it was written (its SHA-256 is not the "
            "manifest's); label the text again"
        )
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
            arrays = {name: loaded[name] for name in _ARRAYS}
        sentences = [tuple(tokens) for tokens in json.loads(arrays.pop("tokens").tobytes())]
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as error:
        raise CrftagError(f"{path}: not a teacher store's shard ({error})") from None
    lengths = arrays["lengths"]
    total = int(lengths.sum())
    shapes = {
        "lengths": (size,),
        "token_marginals": (total, num_tags),
        "transition_marginals": (size, num_tags, num_tags),
        "viterbi": (total,),
    }
    wrong = [
        name
        for name, shape in shapes.items()
        if arrays[name].shape != shape or arrays[name].dtype != _ARRAYS[name]
    ]
    if wrong or [len(s) for s in sentences] != lengths.tolist():
        raise CrftagError(f"{path}: not a teacher store's shard ({', '.join(wrong) or 'tokens'})")
    return sentences, arrays
