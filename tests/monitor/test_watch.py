"""``inductionlab watch DIR``: the monitor over a transformers Trainer's saved checkpoints (docs/monitor.md)."""

import pandas as pd
import pytest

from inductionlab.cli import main
from inductionlab.config import ConfigError
from inductionlab.monitor.phase import phase_line
from inductionlab.monitor.watch import checkpoints, watch

transformers = pytest.importorskip("transformers")


def _fake_trainer_dir(root, steps=(0, 10, 20)):
    """A tiny GPT-2 saved as a Trainer's checkpoint-STEP folders (the same weights, perturbed per step)."""
    import torch

    config = transformers.GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=16,
        n_positions=16,
        vocab_size=20,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
    )
    transformers.set_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    for step in steps:
        with torch.no_grad():
            model.transformer.wpe.weight.mul_(1.5)
        model.save_pretrained(root / f"checkpoint-{step}")
    (root / "checkpoint-x").mkdir()  # not a checkpoint: ignored
    return root


def test_watch_measures_every_checkpoint_and_writes_its_files(tmp_path):
    out = _fake_trainer_dir(tmp_path / "hf")
    assert [s for s, _ in checkpoints(out)] == [0, 10, 20]
    monitor, paths = watch(out)
    assert [p.name for p in paths] == ["watch_heads.parquet", "watch_steps.parquet", "watch.png"]
    assert all(p.is_file() for p in paths)
    steps = pd.read_parquet(out / "watch_steps.parquet")
    assert steps.step.tolist() == [0, 10, 20]
    heads = pd.read_parquet(out / "watch_heads.parquet")
    assert len(heads) == 3 * 2 * 2 and heads.induction.between(0, 1).all()
    assert monitor.config.period == 8 and monitor.config.every == 10  # fitted to 16 positions, the spacing
    assert phase_line(monitor.phase()).startswith("phase change: ")
    _, again = watch(out, every=20)
    assert pd.read_parquet(again[1]).step.tolist() == [0, 20]


def test_cli_watch_prints_the_phase_line_and_refuses_an_empty_directory(tmp_path, capsys):
    out = _fake_trainer_dir(tmp_path / "hf", steps=(5, 10))
    assert main(["watch", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "phase change:" in printed and "watch.png" in printed
    (tmp_path / "empty").mkdir()
    assert main(["watch", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no checkpoints in" in err and len(err.splitlines()) == 1
    with pytest.raises(ConfigError, match="every"):
        watch(out, every=0)


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--threshold", "2"], "--threshold"),
        (["--repeats", "1"], "--repeats"),
        (["--batch", "0"], "--batch"),
        (["--min-rise", "-1"], "--min-rise"),
        (["--batch", "４"], "--batch"),  # a full-width digit is no integer as typed
        (["--threshold", "0,3"], "--threshold"),
        (["--confirm", "0"], "--confirm"),
        (["--llc", "--llc-draws", "0"], "--llc-draws"),
    ],
)
def test_every_monitor_setting_is_a_watch_flag_refused_by_name(flags, said, tmp_path, capsys):
    out = _fake_trainer_dir(tmp_path / "hf", steps=(5, 10))
    try:
        code = main(["watch", str(out), *flags])
    except SystemExit as stop:  # argparse's own refusal of a value that is not of its type
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert not (out / "watch.png").exists()  # refused before any measurement


def test_watch_flags_reach_the_monitor(tmp_path):
    from inductionlab.cli import build_parser
    from inductionlab.cli_report import watch_config
    from inductionlab.monitor import MonitorConfig

    args = build_parser().parse_args(["watch", "d", "--batch", "4", "--period", "6", "--threshold", "0.05"])
    assert watch_config(args) == MonitorConfig(batch=4, period=6, threshold=0.05)
    out = _fake_trainer_dir(tmp_path / "hf", steps=(5, 10))
    assert main(["watch", str(out), "--batch", "4", "--period", "6"]) == 0
    heads = pd.read_parquet(out / "watch_heads.parquet")
    default, _ = watch(out)  # the default measures 8-token copies of 16 sequences: other numbers
    assert not heads.induction.equals(default.heads.induction)
