import dataclasses

import pytest

from inductionlab import experiments
from inductionlab.cli import resolve
from inductionlab.config import (
    ConfigError,
    config_hash,
    flatten,
    format_value,
    from_dict,
    override,
    to_dict,
    with_seeds,
)
from inductionlab.experiments.wang import lazy_to_rich
from inductionlab.keys import describe, field_help, preset_changes


def test_dotted_override_parses_by_annotation():
    cfg = override(
        lazy_to_rich.CONFIG,
        {"task.alpha_star": "2", "train.stage1_steps": "10", "task.tokens": "boolean", "gf": "exact"},
    )
    assert cfg.task.alpha_star == 2.0 and cfg.train.stage1_steps == 10 and cfg.task.tokens == "boolean"
    assert lazy_to_rich.CONFIG.task.alpha_star == 1.0  # frozen original untouched


def test_json_round_trip_and_hash():
    cfg = override(lazy_to_rich.CONFIG, {"seeds": "3"})
    assert from_dict(type(cfg), to_dict(cfg)) == cfg
    assert config_hash(cfg) != config_hash(lazy_to_rich.CONFIG)


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("model.sigma_init", "0", ["model.sigma_init", "> 0"]),
        ("model.sigma_init", "-1e-3", ["model.sigma_init", "> 0"]),
        ("task.L", "4", ["task.L", "≥ 5"]),
        ("task.w_star", "0.8", ["task.w_star", "1/√2"]),
        ("task.tokens", "uniform", ["task.tokens", "'gaussian'", "'boolean'"]),
        ("train.stage1_steps", "ten", ["train.stage1_steps", "int"]),
        ("train.lr", "fast", ["train.lr", "float"]),
        ("task.alpah_star", "1", ["task.alpah_star", "unknown key", "task.alpha_star"]),
        ("task", "1", ["task", "section"]),
    ],
)
def test_invalid_values_name_the_field_and_what_is_allowed(key, value, words):
    with pytest.raises(ConfigError) as err:
        override(lazy_to_rich.CONFIG, {key: value})
    for word in words:
        assert word in str(err.value)


def test_boolean_tokens_reject_closed_form_gf():
    with pytest.raises(ConfigError, match="Gaussian"):
        override(lazy_to_rich.CONFIG, {"task.tokens": "boolean", "gf": "closed"})


def test_unknown_experiment_and_preset():
    with pytest.raises(ConfigError, match="known: .*lazy-to-rich"):
        experiments.get("lazy-to-poor")
    with pytest.raises(ConfigError, match="unknown preset"):
        resolve("lazy-to-rich", "fastest", {})


def test_every_experiment_has_the_interface():
    for name, exp in experiments.REGISTRY.items():
        assert exp.name == name and callable(exp.run) and callable(exp.plot) and "smoke" in exp.presets
        override(exp.config, exp.presets["smoke"])  # presets validate


def test_every_experiment_has_one_run_axis_called_seeds_and_can_be_reseeded():
    for name, exp in experiments.REGISTRY.items():
        names = {f.name for f in dataclasses.fields(exp.config)}
        assert "seeds" in names and not names & {"seed", "n_runs", "init_seed", "instance_seed"}, name
        assert not hasattr(exp, "RUN_AXIS"), name
        cfg = with_seeds(exp.config, 7)
        assert cfg.seeds[0] == 7 and len(cfg.seeds) == len(exp.config.seeds), name
        assert config_hash(cfg) != config_hash(exp.config), name
    assert with_seeds(resolve("wikitext", "smoke", {}), 5, 3).seeds == (5, 6, 7)
    assert with_seeds(lazy_to_rich.CONFIG, 5, 3).seeds == (5, 6, 7)
    with pytest.raises(ConfigError, match="no run axis"):
        with_seeds(resolve("plateau-scaling", "smoke", {}), 5, 3)


@pytest.mark.parametrize(
    "seeds, words",
    [("0,0", "distinct"), ("-1", "integers in 0"), ("2147483648", "integers in 0"), ("[]", "at least one")],
)
def test_bad_seeds_are_refused(seeds, words):
    with pytest.raises(ConfigError, match=words):
        override(lazy_to_rich.CONFIG, {"seeds": seeds})


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_non_finite_floats_are_refused_naming_the_field(value):
    with pytest.raises(ConfigError, match="task.alpha_star: .*finite"):
        override(lazy_to_rich.CONFIG, {"task.alpha_star": value})


def test_per_layer_unions_take_one_value_or_one_per_layer_and_never_none():
    cfg = resolve("wikitext", "smoke", {"model.key_start": "1,2", "model.residual": "true,false"})
    assert cfg.model.key_start == (1, 2) and cfg.model.residual == (True, False)
    assert resolve("wikitext", "smoke", {"model.key_start": "2"}).model.key_start == 2
    with pytest.raises(ConfigError, match="model.key_start: expected int or list of int"):
        resolve("wikitext", "smoke", {"model.key_start": "none"})


def test_a_shared_section_class_names_the_key_of_its_section():
    with pytest.raises(ConfigError, match=r"^tf_train\.lr: "):
        resolve("interventions", "smoke", {"tf_train.lr": "0"})


def test_every_key_of_every_experiment_says_what_it_does():
    """``list --keys`` shows each key's help: the comment beside (or above) its field (docs/conventions.md#keys)."""
    missing = [
        f"{exp.name}: {d['key']}" for exp in experiments.BUILTIN for d in describe(exp.config) if not d["help"].strip()
    ]
    assert not missing, "keys without a help comment:\n" + "\n".join(missing)


@dataclasses.dataclass(frozen=True)
class _Base:
    inherited: int = 1  # from the base class


@dataclasses.dataclass(frozen=True)
class _Helped(_Base):
    # a section comment, apart from the field below it by a blank line

    beside: int = 2  # beside the field
    # above the field, for a help too long to sit beside it,
    # on two lines
    above: tuple[int, ...] = (1, 2)
    spanning: tuple[int, ...] = (  # the definition's first line
        3,  # and its second
    )
    bare: int = 0
    url: str = "a#b"  # a '#' inside the value is not the comment


def test_field_help_reads_the_comment_beside_above_or_inside_a_field_and_of_its_bases():
    assert field_help(_Helped) == {
        "inherited": "from the base class",
        "beside": "beside the field",
        "above": "above the field, for a help too long to sit beside it, on two lines",
        "spanning": "the definition's first line and its second",
        "url": "a '#' inside the value is not the comment",
    }


def test_preset_changes_give_each_presets_keys_with_default_and_value():
    for exp in experiments.BUILTIN:
        default = flatten(exp.config)
        for preset, values in exp.presets.items():
            changes = preset_changes(exp.config, values)
            assert [key for key, _, _ in changes] == list(values), (exp.name, preset)
            try:
                resolved = flatten(resolve(exp.name, preset, {}))
            except ConfigError:  # a preset for another machine (device cuda): shown, not validated here
                continue
            for key, before, after in changes:
                assert (before, after) == (format_value(default[key]), format_value(resolved[key])), (exp.name, key)
    with pytest.raises(ConfigError, match="train.stpes: unknown key"):
        preset_changes(experiments.get("lazy-to-rich").config, {"train.stpes": 10})
