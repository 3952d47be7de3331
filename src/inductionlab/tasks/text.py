"""Natural-language data: WikiText-2 (or any UTF-8 text) as token streams for language modelling (Wang et al.,
docs/conventions.md#wang-6-6), and the repeated-text variant that shows the induction-head phase change on CPU.

**Files.**  ``path`` is a directory or a text file; empty means the ``INDUCTIONLAB_DATA`` environment variable.
A directory is searched for each split in the usual layouts — ``wiki.{split}.tokens`` (the original
release), ``{split}.txt`` or ``{split}.tokens``, directly or in a ``wikitext-2`` sub-folder.  A single file is
split into its first 90 % (train) and last 10 % (validation) of lines.  The shared folder has no train split,
so the defaults read ``valid`` as the training split and ``test`` as the validation split.

**Tokenizers.**  ``word``: whitespace words plus ``<eos>`` at each line end (the usual WikiText LM
convention); the vocabulary is the K most frequent training words plus ``<unk>`` (K = ``vocab_size``; 0 keeps
every training word), ties broken by first occurrence so the vocabulary is deterministic.  ``bpe``: a
byte-pair encoding with ``vocab_size`` entries trained on the training split with the ``tokenizers`` library
(the ``text`` extra; docs/conventions.md#extras).  A text run saves its tokenizer — ``vocab.json`` (word) or
``tokenizer.json`` (BPE, the ``tokenizers`` format) — so that :func:`inductionlab.load_model` gives the model with
its ``encode`` / ``decode`` (docs/models.md).

**Batches.**  :func:`random_chunks` draws contiguous windows of L + 1 tokens (inputs and next-token targets)
at random offsets from an explicit generator.  :func:`repeated_chunks` builds sequences of real text in which
a span is repeated later (the repeated-token task of Olsson et al. over real words).
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from inductionlab.config import ConfigError, require
from inductionlab.extras import require as require_extra
from inductionlab.paths import what_is
from inductionlab.runs import write_text

ENV = "INDUCTIONLAB_DATA"
UNK, EOS = "<unk>", "<eos>"
LAYOUTS = ("wiki.{split}.tokens", "{split}.txt", "{split}.tokens")


class MissingDataError(FileNotFoundError):
    """The text data could not be found; the message says where to put it and which layouts work."""


@dataclass(frozen=True)
class TextConfig:
    """Where the text is and how it becomes tokens."""

    path: str = ""  # directory or file; "" → $INDUCTIONLAB_DATA
    train_split: str = "valid"  # split that trains (the shared WikiText-2 has no train split: valid)
    val_split: str = "test"  # split that validates, ≠ train_split
    tokenizer: Literal["word", "bpe"] = "word"  # word (top vocab_size words) or bpe (needs the text extra: tokenizers)
    vocab_size: int = 2000  # word: top-K words + <unk> (0: all); bpe: the BPE vocabulary size
    L: int = 200  # context length L of each training chunk (tokens)

    def __post_init__(self) -> None:
        require(self.vocab_size >= 0, "data.vocab_size", f"must be ≥ 0 (0: every training word), got {self.vocab_size}")
        require(
            self.tokenizer == "word" or self.vocab_size >= 260,
            "data.vocab_size",
            "a BPE vocabulary needs ≥ 260 entries (the bytes seen plus merges)",
        )
        require(self.L >= 2, "data.L", f"must be ≥ 2, got {self.L}")
        require(self.train_split != self.val_split, "data.val_split", "must differ from data.train_split")


def tokenizer_needs(cfg: TextConfig) -> dict[str, str]:
    """The optional package of ``cfg``'s tokenizer (``tokenizers`` for ``bpe``), for a text experiment's ``needs``
    (docs/conventions.md#extras)."""
    return {"tokenizers": "data.tokenizer 'bpe'"} if cfg.tokenizer == "bpe" else {}


def data_root(cfg: TextConfig) -> Path:
    """The configured path, or $INDUCTIONLAB_DATA; a clear error if neither exists."""
    raw = cfg.path or os.environ.get(ENV, "")
    kind = what_is(raw) if raw else ""
    if not raw or kind:
        where = f"{raw!r} {kind}" if raw else f"no --data.path given and ${ENV} is not set"
        raise MissingDataError(
            f"text data not found: {where}. Put WikiText-2 in a folder and pass it with --data.path DIR (or set "
            f"{ENV}=DIR). Layouts read: {', '.join(LAYOUTS)} for the splits "
            f"{cfg.train_split!r} and {cfg.val_split!r} (also inside DIR/wikitext-2), or --data.path FILE for one "
            "UTF-8 text file (first 90% of lines train, last 10% validation)."
        )
    return Path(raw)


def split_file(root: Path, split: str) -> Path:
    """The file of ``split`` under ``root`` in one of the known layouts."""
    for folder in (root, root / "wikitext-2"):
        for layout in LAYOUTS:
            candidate = folder / layout.format(split=split)
            if candidate.is_file():
                return candidate
    found = sorted(p.name for p in root.iterdir())[:10] if root.is_dir() else []
    raise MissingDataError(
        f"no {split!r} split under {root}: looked for {', '.join(l.format(split=split) for l in LAYOUTS)} "
        f"(also in {root / 'wikitext-2'}); the folder holds {found}. Choose the splits with "
        "--data.train_split / --data.val_split."
    )


def read_lines(path: Path) -> list[str]:
    """The lines of the UTF-8 text file ``path``; a binary or otherwise encoded file is refused naming it."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"data.path: {path} is not UTF-8 text (byte {err.start}: {err.reason}); give UTF-8 text files "
            "(convert with e.g. iconv -f latin1 -t utf-8)"
        ) from None


def read_splits(cfg: TextConfig) -> tuple[list[str], list[str]]:
    """(train lines, validation lines)."""
    root = data_root(cfg)
    if root.is_file():
        lines = read_lines(root)
        require(len(lines) >= 2, "data.path", f"{root} needs at least 2 lines")
        cut = max(1, int(0.9 * len(lines)))
        return lines[:cut], lines[cut:]
    return read_lines(split_file(root, cfg.train_split)), read_lines(split_file(root, cfg.val_split))


def _words(lines: list[str]) -> list[str]:
    return [w for line in lines if line.strip() for w in (*line.split(), EOS)]


class WordTokenizer:
    """The ``word`` tokenizer: whitespace words ↦ their ids in ``vocab`` (a word outside it ↦ <unk>, id 0)."""

    kind = "word"

    def __init__(self, vocab: list[str]):
        self.vocab = list(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no <eos> is added: the corpus adds one at each line end)."""
        return [self.index.get(w, 0) for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.vocab[int(i)] for i in ids)

    def to_str(self) -> str:
        return json.dumps({"tokenizer": "word", "vocab": self.vocab}, ensure_ascii=False)


class BPETokenizer:
    """The ``bpe`` tokenizer: a ``tokenizers.Tokenizer`` with :meth:`encode` / :meth:`decode` on plain ids."""

    kind = "bpe"

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.vocab = [tokenizer.id_to_token(i) for i in range(tokenizer.get_vocab_size())]

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([int(i) for i in ids])

    def to_str(self) -> str:
        return self.tokenizer.to_str()


TextTokenizer = WordTokenizer | BPETokenizer
TOKENIZER_FILES = {"word": "vocab.json", "bpe": "tokenizer.json"}  # what a text run saves (docs/models.md)


def save_tokenizer(tokenizer: TextTokenizer, run_dir: Path) -> Path:
    """Write ``tokenizer`` into ``run_dir`` (``vocab.json`` or ``tokenizer.json``: :data:`TOKENIZER_FILES`)."""
    path = Path(run_dir) / TOKENIZER_FILES[tokenizer.kind]
    write_text(path, tokenizer.to_str())
    return path


def load_tokenizer(run_dir: Path) -> TextTokenizer | None:
    """The tokenizer a text run saved in ``run_dir`` (:func:`save_tokenizer`); None if it saved none."""
    word, bpe = (Path(run_dir) / TOKENIZER_FILES[k] for k in ("word", "bpe"))
    if word.is_file():
        return WordTokenizer(json.loads(word.read_text(encoding="utf-8"))["vocab"])
    if bpe.is_file():
        return BPETokenizer(_tokenizers().Tokenizer.from_str(bpe.read_text(encoding="utf-8")))
    return None


def _tokenizers() -> Any:
    return require_extra("tokenizers", "the BPE tokenizer (data.tokenizer 'bpe')")


@dataclass
class Corpus:
    """Token ids of both splits, (N_train,) and (N_val,) int64, the vocabulary (id → string) and the tokenizer
    that made them (:meth:`encode` text → ids, :meth:`decode` ids → text)."""

    train: torch.Tensor
    val: torch.Tensor
    vocab: list[str]
    tokenizer: TextTokenizer


def word_corpus(train_lines: list[str], val_lines: list[str], vocab_size: int) -> Corpus:
    """Word-level tokens; the vocabulary is the ``vocab_size`` most frequent training words plus <unk>."""
    train_words = _words(train_lines)
    counts = collections.Counter(train_words)
    counts.pop(UNK, None)
    ranked = sorted(counts, key=lambda w: -counts[w])  # stable: ties keep their first-occurrence order
    tok = WordTokenizer([UNK] + (ranked[:vocab_size] if vocab_size else ranked))

    def encode(words: list[str]) -> torch.Tensor:
        return torch.tensor([tok.index.get(w, 0) for w in words], dtype=torch.long)

    return Corpus(encode(train_words), encode(_words(val_lines)), tok.vocab, tok)


def bpe_corpus(train_lines: list[str], val_lines: list[str], vocab_size: int) -> Corpus:
    """Byte-pair tokens from a BPE model with ``vocab_size`` entries trained on the training lines."""
    tk = _tokenizers()
    tok = tk.Tokenizer(tk.models.BPE(unk_token=UNK))
    tok.pre_tokenizer = tk.pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        (l for l in train_lines if l.strip()),
        tk.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[UNK, EOS], show_progress=False),
    )
    eos = tok.token_to_id(EOS)

    def encode(lines: list[str]) -> torch.Tensor:
        ids = [i for enc in tok.encode_batch([l for l in lines if l.strip()]) for i in (*enc.ids, eos)]
        return torch.tensor(ids, dtype=torch.long)

    wrapped = BPETokenizer(tok)
    return Corpus(encode(train_lines), encode(val_lines), wrapped.vocab, wrapped)


def load_corpus(cfg: TextConfig) -> Corpus:
    """Read the splits and tokenize them as configured; checks that the training split is long enough."""
    train_lines, val_lines = read_splits(cfg)
    corpus = (word_corpus if cfg.tokenizer == "word" else bpe_corpus)(train_lines, val_lines, cfg.vocab_size)
    for name, ids in (("training", corpus.train), ("validation", corpus.val)):
        require(
            len(ids) > cfg.L + 1, "data.L", f"the {name} split has {len(ids)} tokens, fewer than L + 2 = {cfg.L + 2}"
        )
    return corpus


def random_chunks(ids: torch.Tensor, L: int, batch: int, generator: torch.Generator) -> torch.Tensor:
    """(batch, L + 1) contiguous windows at uniform random offsets of the stream ``ids`` (N,)."""
    starts = torch.randint(0, len(ids) - L, (batch,), generator=generator)
    return ids[starts.view(-1, 1) + torch.arange(L + 1)]


def repeated_chunks(
    ids: torch.Tensor, L: int, batch: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Real text with a repeat: the first ⌈L/2⌉ tokens of a random window followed by a copy of them,
    truncated to L tokens — tokens (batch, L) — and the 0/1 mask (batch, L) of the *predictable* positions:
    targets at positions i ≥ ⌈L/2⌉ + 1 (0-based i), whose next token is a copy already seen in the context."""
    half = (L + 1) // 2
    text = random_chunks(ids, half - 1, batch, generator)  # (batch, half)
    tokens = torch.cat([text, text], 1)[:, :L]
    repeated = torch.zeros(batch, L, dtype=torch.bool)
    repeated[:, half : L - 1] = True  # predicting tokens[i + 1] from position i: copies of text[i + 1 − half]
    return tokens, repeated


def periodic_chunks(
    ids: torch.Tensor, L: int, batch: int, generator: torch.Generator, periods: tuple[int, int] = (8, 24)
) -> tuple[torch.Tensor, torch.Tensor]:
    """Real text repeated with a period of its own: per sequence a period k drawn uniformly from ``periods``
    (inclusive) and a random window of k tokens, repeated to fill L tokens — tokens (batch, L) — and the 0/1 mask
    (batch, L) of the positions i ≥ k (0-based, i < L − 1) whose next token repeats one already seen after a copy of
    the current token: what an induction head predicts.  The period varies, so no fixed offset copies it (unlike
    :func:`repeated_chunks`, which a model with absolute positions can copy by position; docs/monitor.md)."""
    lo, hi = periods
    require(1 <= lo <= hi < L, "periods", f"need 1 ≤ low ≤ high < L = {L}, got {periods}")
    require(len(ids) > hi, "data", f"the text has {len(ids)} tokens, fewer than a window of {hi + 1}")
    k = torch.randint(lo, hi + 1, (batch, 1), generator=generator)  # (batch, 1)
    start = torch.randint(0, len(ids) - hi, (batch, 1), generator=generator)
    windows = ids[start + torch.arange(hi)]  # (batch, hi)
    positions = torch.arange(L)
    tokens = windows.gather(1, positions % k)  # (batch, L)
    repeated = (positions >= k) & (positions < L - 1)
    return tokens, repeated
