from pathlib import Path

import pytest
import torch

from inductionlab.config import ConfigError
from inductionlab.tasks import text
from tests.conftest import write_corpus

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "wikitext-2"


@pytest.mark.parametrize("layout", ["wiki.{split}.tokens", "{split}.txt", "{split}.tokens"])
def test_reads_the_usual_layouts_and_the_nested_folder(tmp_path, layout):
    write_corpus(tmp_path / "wikitext-2", layout)
    for root in (tmp_path, tmp_path / "wikitext-2"):
        c = text.load_corpus(text.TextConfig(path=str(root), train_split="train", val_split="valid", L=10))
        assert len(c.train) > 100 and len(c.val) > 100 and c.vocab[0] == text.UNK


def test_word_vocabulary_is_top_k_plus_unk_and_deterministic():
    lines = ["a a a b b c", "d a b"]
    c = text.word_corpus(lines, ["a e c"], vocab_size=2)
    assert c.vocab == ["<unk>", "a", "b"]
    assert c.train.tolist() == [1, 1, 1, 2, 2, 0, 0, 0, 1, 2, 0]  # a a a b b c <eos> d a b <eos>
    assert c.val.tolist() == [1, 0, 0, 0]  # a <unk> <unk> <eos>→<unk> (eos is rarer than the top 2)
    full = text.word_corpus(lines, ["a e c"], vocab_size=0)
    assert full.vocab == ["<unk>", "a", "b", "<eos>", "c", "d"]  # ties keep first-occurrence order


def test_a_single_file_is_split_90_10(tmp_path):
    f = tmp_path / "book.txt"
    f.write_text("\n".join(f"line {i} word" for i in range(100)), encoding="utf-8")
    tr, va = text.read_splits(text.TextConfig(path=str(f), L=4))
    assert len(tr) == 90 and len(va) == 10 and va[0] == "line 90 word"


def test_missing_data_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.delenv(text.ENV, raising=False)
    with pytest.raises(text.MissingDataError) as err:
        text.load_corpus(text.TextConfig())
    assert "--data.path" in str(err.value) and text.ENV in str(err.value) and "wiki.{split}.tokens" in str(err.value)
    with pytest.raises(text.MissingDataError, match="does not exist"):
        text.load_corpus(text.TextConfig(path=str(tmp_path / "nope")))
    with pytest.raises(text.MissingDataError, match="no 'valid' split"):
        text.load_corpus(text.TextConfig(path=str(tmp_path)))


def test_environment_variable_is_the_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv(text.ENV, str(write_corpus(tmp_path)))
    assert len(text.load_corpus(text.TextConfig(L=8)).train) > 0


def test_random_chunks_are_contiguous_windows_from_the_generator():
    ids = torch.arange(1000)
    a = text.random_chunks(ids, 20, 8, torch.Generator().manual_seed(3))
    b = text.random_chunks(ids, 20, 8, torch.Generator().manual_seed(3))
    assert a.shape == (8, 21) and torch.equal(a, b)
    assert bool((a[:, 1:] - a[:, :-1] == 1).all())


def test_repeated_chunks_repeat_the_first_half_and_mark_the_predictable_targets():
    ids = torch.arange(5000)
    x, mask = text.repeated_chunks(ids, 11, 4, torch.Generator().manual_seed(0))
    assert x.shape == mask.shape == (4, 11)
    assert torch.equal(x[:, 6:], x[:, :5])
    for i in range(10):  # position i predicts x[i + 1]: by induction iff some j < i has x[j] = x[i], x[j+1] = x[i+1]
        copy = ((x[:, :i] == x[:, i : i + 1]) & (x[:, 1 : i + 1] == x[:, i + 1 : i + 2])).any(1)
        assert torch.equal(mask[:, i], copy)
    assert not bool(mask[:, 10].any())


def test_bpe_tokenizer_trains_locally(tmp_path):
    pytest.importorskip("tokenizers")
    root = write_corpus(tmp_path)
    c = text.load_corpus(
        text.TextConfig(path=str(root), train_split="train", val_split="valid", tokenizer="bpe", vocab_size=300, L=10)
    )
    assert len(c.vocab) <= 300 and int(c.train.max()) < len(c.vocab) and len(c.train) > 100


def test_bad_text_configs_are_rejected():
    with pytest.raises(ConfigError, match="data.vocab_size"):
        text.TextConfig(tokenizer="bpe", vocab_size=100)
    with pytest.raises(ConfigError, match="data.val_split"):
        text.TextConfig(train_split="test", val_split="test")


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared WikiText-2 folder is absent")
def test_shared_wikitext_loads_with_the_cpu_defaults():
    c = text.load_corpus(text.TextConfig(path=str(SHARED)))
    assert len(c.vocab) == 2001 and len(c.train) > 200_000 and len(c.val) > 200_000
    assert c.vocab[:4] == ["<unk>", "the", ",", "."]
