"""The kit's copy of TRL's config field names, and the GRPO settings it declares itself, against the installed
TRL: an upgrade that adds, removes or re-defaults a field fails here, not in a user's run."""

import dataclasses

import pytest

from kit.config.sections import GRPOSection, SFTSection
from kit.config.trl_fields import GRPO_CONFIG_FIELDS, SFT_CONFIG_FIELDS, TRL_VERSION
from kit.train.stages.grpo import KIT_ONLY

# Settings where the kit's default differs from TRL's on purpose, and why.
KIT_DEFAULTS = {
    "learning_rate": "5e-6: LoRA GRPO; TRL's 1e-6 barely moves an adapter in a few hundred steps",
    "max_completion_length": "256 tokens: a short chain of reasoning; recipes set their own",
    "num_train_epochs": "1: recipes count max_steps instead",
    "epsilon": "null: resolved from the loss, TRL's 0.2 or GSPO's 3e-4 (kit.train.stages.grpo.resolved_clip)",
    "lr_scheduler_type": "cosine, the guide's",
    "weight_decay": "0.1, the guide's",
    "adam_beta2": "0.99, the guide's",
    "max_grad_norm": "0.1, the guide's",
    "optim": "adamw_8bit: a quarter of the optimizer memory",
    "logging_steps": "every step: the health checks read every step",
    "save_steps": "100, with save_minutes beside it",
    "save_total_limit": "the latest 2 checkpoints, not all of them",
    "max_tool_calling_iterations": "4 rounds of tool calls: TRL's None lets a model that never stops calling "
                                   "spend the whole budget on calls",
}


def trl_config(cls_name):
    pytest.importorskip("unsloth")  # Unsloth patches TRL at import; the kit always imports it first
    import trl

    return getattr(trl, cls_name)


@pytest.mark.parametrize("cls_name, fields", [("GRPOConfig", GRPO_CONFIG_FIELDS), ("SFTConfig", SFT_CONFIG_FIELDS)])
def test_field_names_match_the_installed_trl(cls_name, fields):
    import trl

    cls = trl_config(cls_name)
    assert trl.__version__ == TRL_VERSION, "TRL changed: regenerate kit/config/trl_fields.py and check the knobs"
    assert set(cls.__dataclass_fields__) == fields


def test_grpo_settings_are_trl_fields_with_trls_defaults_unless_said():
    defaults = {f.name: f.default for f in dataclasses.fields(trl_config("GRPOConfig"))}
    kit_only = {*KIT_ONLY, "extra"}
    for name, field in GRPOSection.model_fields.items():
        if name in kit_only:
            continue
        assert name in defaults, f"grpo.{name} is not a GRPOConfig field"
        if name not in KIT_DEFAULTS:
            assert field.default == defaults[name], f"grpo.{name}: kit {field.default!r}, TRL {defaults[name]!r}"


def test_sft_settings_are_sft_config_fields():
    assert set(SFTSection.model_fields) - {"extra"} <= SFT_CONFIG_FIELDS
