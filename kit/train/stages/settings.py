"""`grpo.extra` and `sft.extra`: any other field of TRL's config class, passed through, checked first."""

from __future__ import annotations

from kit.config import RunConfig
from kit.config.rules import not_a_trl_setting
from kit.errors import KitError

CHECKPOINTING_SET_BY = {"gradient_checkpointing": "model.gradient_checkpointing"}


def checkpointing(cfg: RunConfig) -> dict:
    """model.gradient_checkpointing as the trainer's field. TRL's configs default it to True, and transformers'
    Trainer then turns recomputation on in a model Unsloth loaded without it: "false" must reach the trainer
    (on the CPU demo's real model a GRPO step took 7.7 s with it on, 6.9 s off)."""
    return {"gradient_checkpointing": cfg.model.gradient_checkpointing != "false"}


def checked_extra(section: str, extra: dict, trl_config: type, kit_sets: dict[str, str]) -> dict:
    """`extra`, refused when a key is not a field of the installed `trl_config` or is set by the kit.

    The config already refused keys with a setting of their own and keys missing from TRL's fields as the
    kit pins them (kit.config.rules.extra_problems); this checks the TRL actually installed, and the keys
    the kit passes itself, which would reach TRL as "got multiple values for keyword argument" (`seed`).
    `kit_sets` maps each key the kit sets to where the user sets it instead.
    """
    unknown = sorted(set(extra) - set(trl_config.__dataclass_fields__))
    if unknown:
        raise KitError(not_a_trl_setting(section, unknown[0], trl_config.__name__, "this TRL version"))
    for key in sorted(extra):
        if key in kit_sets:
            raise KitError(f"{section}.extra.{key}: the kit sets it from {kit_sets[key]}; change that instead")
    return extra
