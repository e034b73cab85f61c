from typing import get_args

import pytest

from kit.cli.parser import build_parser
from kit.config import LaunchConfig, RunConfig
from kit.plan.memory import Stack


def choices_of(command: str, flag: str) -> list[str]:
    sub = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == command)[1]
    return list(next(a for a in sub._actions if flag in a.option_strings).choices)


def test_choices_come_from_the_config_types():
    assert choices_of("train", "--profile") == list(get_args(RunConfig.model_fields["profile"].annotation))
    assert choices_of("train", "--launcher") == list(get_args(LaunchConfig.model_fields["launcher"].annotation))
    assert choices_of("plan", "--profile") == ["smoke", "full"]
    assert choices_of("plan", "--stack") == list(get_args(Stack))


def test_a_launcher_the_config_does_not_know_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "gsm8k", "--launcher", "horovod"])
    assert "invalid choice: 'horovod'" in capsys.readouterr().err


def test_check_takes_trains_settings_and_exits_0(monkeypatch):
    """`kit check` layers settings as `kit train` does (flags, overrides after options) and only warns: exit 0."""
    import kit.train.check
    from kit.cli import main

    seen = {}
    monkeypatch.setattr(kit.train.check, "check_command", lambda request, recipe: seen.update(
        request=request, recipe=recipe.name))
    assert main(["check", "digit_sum", "--profile", "smoke", "--model", "kit:tiny-llama",
                 "grpo.num_generations=4"]) == 0
    assert seen["recipe"] == "digit_sum"
    assert seen["request"].overrides == {"recipe": "digit_sum", "profile": "smoke", "model": {"name": "kit:tiny-llama"},
                                         "grpo": {"num_generations": 4}}
