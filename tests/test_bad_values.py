"""Bad values of every class the adversarial tester found are refused before any training: exit 2, one line naming
the key (or the file), no traceback; valid per-layer values are accepted."""

import math

import pandas as pd
import pytest

from inductionlab import experiments, load_run
from inductionlab.cli import main
from inductionlab.config import to_dict
from inductionlab.runner import NaNResultsError, check_results
from inductionlab.runs import Results

L2R = ["run", "lazy-to-rich", "--preset", "smoke", "--no-progress"]
WIKI = ["run", "wikitext", "--preset", "smoke", "--no-progress"]
RT = ["run", "repeated-text", "--preset", "smoke", "--no-progress"]

CASES = [  # (case, argv, words the message must contain)
    ("float-nan", [*L2R, "--model.sigma_init", "nan"], ["model.sigma_init", "finite"]),
    ("float-inf", ["run", "markov-stages", "--preset", "smoke", "--task.alpha", "inf"], ["task.alpha", "finite"]),
    ("chen-w-plus-nan", ["run", "markov-stages", "--preset", "smoke", "--model.w_plus", "nan"], ["model.w_plus"]),
    ("slope-init-inf", [*WIKI, "--model.slope_init", "inf"], ["model.slope_init", "finite"]),
    ("float-list-nan", ["run", "scb-convergence", "--preset", "smoke", "--lambda_sweep", "nan"], ["lambda_sweep"]),
    ("clamp-absurd", [*L2R, "--intervene.clamp", "w_KQ=1e30"], ["intervene.clamp", "1e30"]),
    ("steps-huge", [*L2R, "--train.stage2_steps", "1e18"], ["train.stage2_steps", "out of memory", "GB"]),
    (
        "section-steps-huge",
        ["run", "interventions", "--preset", "smoke", "--tf_train.steps", "1e18"],
        ["tf_train.steps"],
    ),
    ("window-past-end", [*L2R, "--intervene.freeze", "layer1@100000:200000"], ["intervene.freeze", "never act"]),
    ("head-out-of-range", [*RT, "--intervene.ablate", "blocks.1.attn[5]"], ["intervene.ablate", "head 5"]),
    ("key-start-past-context", [*WIKI, "--model.key_start", "100"], ["model.key_start", "≤"]),
    ("empty-eval", ["run", "interventions", "--preset", "smoke", "--tf_eval_size", "0"], ["tf_eval_size", "≥ 1"]),
    ("latin1-data", [*WIKI, "--data.path", "{tmp}/latin1.txt"], ["latin1.txt", "UTF-8"]),
    ("repeated-setting", ["run", "markov-stages", "--preset", "smoke", "--losses", "ce,ce"], ["losses", "distinct"]),
    (
        "repeated-grid-value",
        ["run", "plateau-scaling", "--preset", "smoke", "--grid.L_values", "20,20"],
        ["grid.L_values"],
    ),
    ("config-not-json", ["run", "markov-mi", "--config", "{tmp}/latin1.txt"], ["--config", "latin1.txt", "JSON"]),
]


@pytest.mark.parametrize("case, argv, words", CASES, ids=[c[0] for c in CASES])
def test_bad_value_is_refused_before_training(case, argv, words, tmp_path, capsys):
    (tmp_path / "latin1.txt").write_bytes("café au lait\nsecond line\nthird line\n".encode("latin-1"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2, case
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 2, err
    for word in words:
        assert word in err, (case, word, err)
    assert not (tmp_path / "run" / "summary.json").exists()


def test_per_layer_values_documented_by_list_keys_are_accepted(tmp_path, capsys):
    assert main(["list", "--keys", "wikitext"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for key in ("key_start", "ffn_width", "dp"):
        line = next(line for line in lines if f"--model.{key} " in line)
        assert "list of" in line and "or none" not in line, line
    per_layer = ["--model.key_start", "1,2", "--model.ffn_width", "4,4", "--model.dp", "[[true,false],[true,true]]"]
    assert main([*WIKI, *per_layer, "--out", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "summary.json").exists()


def test_precedence_is_default_then_preset_then_config_file_then_command_line(tmp_path):
    """A --config file (any name, any subset of keys) beats the preset; a command-line key beats the file."""
    keys = tmp_path / "my keys.json"
    keys.write_text('{"experiment": "lazy-to-rich", "task": {"alpha_star": 2, "L": 40}}')
    assert (
        main(["run", "--config", str(keys), "--preset", "smoke", "--task.L", "12", "--out", str(tmp_path / "a")]) == 0
    )
    cfg = load_run(tmp_path / "a").config
    smoke = to_dict(experiments.configure("lazy-to-rich", "smoke"))
    assert (cfg["task"]["alpha_star"], cfg["task"]["L"]) == (2.0, 12)  # file over preset, line over file
    assert cfg["train"] == smoke["train"]  # the preset still sets what the file leaves alone
    run_cfg = tmp_path / "a" / "config.json"
    assert main(["run", "--config", str(run_cfg), "--preset", "smoke", "--out", str(tmp_path / "b")]) == 0
    assert load_run(tmp_path / "b").config == cfg  # a saved run's config wins over the preset whole


def test_results_that_are_nan_throughout_stop_the_run_and_phase_times_not_reached_do_not():
    """The last guard behind the config checks: a measure with no finite value is a stop (exit 3), never a result."""
    fine = Results({"metrics": pd.DataFrame({"step": [0, 1], "loss": [1.0, math.nan]})}, {"T_I": None, "final": {}})
    check_results(fine)
    never = pd.DataFrame({"model": ["own"], "loss_drop_step": [math.nan], "phase_step": [math.nan]})
    check_results(Results({"phases": never}, {"phases": {"loss_drop_step": math.nan}}))  # a time never reached
    declared = Results({"phases": pd.DataFrame({"escape_loss": [math.nan]})}, {"escape_loss": math.nan})
    check_results(declared, times=("escape_loss",))  # a time by declaration, whatever its name
    with pytest.raises(NaNResultsError, match="escape_loss"):
        check_results(declared)  # undeclared, a loss by its name
    for bad in (
        Results({"scores": pd.DataFrame({"run": [0, 1], "induction_score": [math.nan, math.nan]})}, {}),
        Results({}, {"final": {"val_loss": math.nan}}),
    ):
        with pytest.raises(NaNResultsError, match="NaN"):
            check_results(bad)
