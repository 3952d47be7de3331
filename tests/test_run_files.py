"""Every run file is read through one guard (``runs.read_json`` and the readers beside it): a damaged
``summary.json``, ``reproduce.json`` or a TransformerLens ``config.json`` is refused with exit 2 and a message naming
the file, without a traceback, and nothing is deleted."""

import json

import pytest
import torch

from inductionlab.cli import main


def _reproduce_dir(root):
    out = root / "r"
    (out / "markov-mi").mkdir(parents=True)
    info = {"paper": "all", "budget": "smoke", "experiments": ["markov-mi"], "dirs": {"markov-mi": "markov-mi"}}
    (out / "reproduce.json").write_text(json.dumps({**info, "draws": {}, "controls": {}, "skipped": {}}))
    (out / "markov-mi" / "config.json").write_text(json.dumps({"experiment": "markov-mi"}))
    return out


def _damaged_summary(root):
    out = _reproduce_dir(root)
    (out / "markov-mi" / "summary.json").write_text("{bad")
    return ["report", str(out)], out / "markov-mi" / "summary.json"


def _damaged_record(root):
    out = _reproduce_dir(root)
    (out / "reproduce.json").write_text("[1, 2]")
    return ["report", str(out)], out / "reproduce.json"


def _damaged_run_summary(root):
    out = root / "run"
    assert main(["run", "markov-mi", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 0
    (out / "summary.json").write_bytes(b"\xff\xfe")
    return ["report", str(out)], out / "summary.json"


def _damaged_tl_config(root):
    pytest.importorskip("transformer_lens")
    series = root / "tl"
    series.mkdir()
    fields = {"n_layers": 2, "d_model": 8, "d_head": 4, "n_ctx": 16, "d_vocab": 10, "n_heads": "two", "act_fn": 3}
    (series / "config.json").write_text(json.dumps(fields))
    torch.save({}, series / "step-10.pt")
    return ["watch", str(series)], series / "config.json"


def _damaged_run_config(root):
    out = root / "run"
    assert main(["run", "markov-mi", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 0
    (out / "config.json").write_text("{not json")
    return [
        "run",
        "markov-mi",
        "--preset",
        "smoke",
        "--out",
        str(out),
        "--resume",
        "--no-progress",
    ], out / "config.json"


def _damaged_sweep_record(root):
    out = root / "sweep"
    assert main(["sweep", "markov-mi", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 0
    (out / "sweep.json").write_text("\x00\x01")
    return ["report", str(out)], out / "sweep.json"


CASES = {
    "run config.json (--resume)": _damaged_run_config,
    "sweep.json (report)": _damaged_sweep_record,
    "reproduce summary.json": _damaged_summary,
    "reproduce.json": _damaged_record,
    "run summary.json": _damaged_run_summary,
    "TransformerLens config.json": _damaged_tl_config,
}


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_run_file_is_refused_naming_it_and_nothing_is_deleted(case, tmp_path, capsys):
    argv, damaged = CASES[case](tmp_path)
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(damaged) in err and "Traceback" not in err, err
    assert all(p.exists() for p in before)  # nothing removed
