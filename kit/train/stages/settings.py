"""What both stages pass TRL beyond their own section: the defaults the kit pins, checkpointing, and `extra`.

`grpo.extra` and `sft.extra` pass any other field of TRL's config class through, checked first.
"""

from __future__ import annotations

from kit import ranks
from kit.config import RunConfig
from kit.config.rules import not_a_trl_setting
from kit.errors import KitError

CHECKPOINTING_SET_BY = {"gradient_checkpointing": "model.gradient_checkpointing"}

# TRL defaults that the configs Unsloth generates on a GPU change without a word (unsloth/models/rl.py, the
# `replacements`), each decided here and passed on every backend, so one config trains alike on a GPU and on this
# CPU. run.yaml's trainer section records what the trainer held; grpo.extra / sft.extra may still change them.
PINNED_DEFAULTS = {
    # TRL's default. Unsloth's GPU trainer turns TRL's own correction off and applies its own when this is True.
    "vllm_importance_sampling_correction": True,
    # A nan or inf loss logged as it is, not as the mean of earlier steps (TRL's filter): FiniteGuard must see it.
    "logging_nan_inf_filter": False,
    "torch_empty_cache_steps": None,  # TRL's default (Unsloth: 250); nothing measured here says emptying helps
    # The kit scores held-out data itself (kit.train.evaluation); the trainers never evaluate: TRL's defaults.
    "per_device_eval_batch_size": 8,
    "eval_accumulation_steps": None,
    "generation_kwargs": {},  # TRL reads None and {} alike; Unsloth's default is {}
    "padding_free": False,  # SFT: padded batches everywhere (Unsloth would pick padding-free on a GPU; a CPU cannot)
}

# GRPO's alone (SFT keeps TRL's MoE router loss, which Unsloth's SFT keeps too).
GRPO_PINNED_DEFAULTS = {
    "router_aux_loss_coef": 0.0,  # Unsloth's GRPO forward computes no MoE router loss on a GPU: none on a CPU either
}

# What the kit leaves to Unsloth's GPU-side config, and why; tests/train/stages/test_unsloth_config_patch.py lets
# these fields alone differ between TRL's config and Unsloth's for the same kit settings.
LEFT_TO_UNSLOTH = {
    "bf16": "Unsloth's trainer chooses mixed precision from the dtype it loaded the model in",
    "fp16": "Unsloth's trainer chooses mixed precision from the dtype it loaded the model in",
    "gradient_checkpointing_kwargs": "one process: Unsloth's own checkpointing re-enters (use_reentrant=True), "
                                     "which its CPU backend does not; several processes: set by the kit after the "
                                     "config is built (multi_process_checkpointing)",
    "fp16_full_eval": "evaluation precision, chosen with the training precision; the kit's trainers never evaluate",
    "bf16_full_eval": "evaluation precision, chosen with the training precision; the kit's trainers never evaluate",
    "dataset_num_proc": "the kit tokenizes the SFT rows itself; the trainers only build labels from them",
    "max_seq_length": "a field of Unsloth's config alone: the length the model was loaded with (model.max_seq_length)",
}


def pinned_defaults(trl_config: type) -> dict:
    """PINNED_DEFAULTS that are fields of `trl_config` (SFTConfig or GRPOConfig)."""
    return {key: value for key, value in PINNED_DEFAULTS.items() if key in trl_config.__dataclass_fields__}


def multi_process_checkpointing(args, extra: dict):
    """Non-reentrant checkpointing in a rank of a multi-process run, set on the built config `args`, unless the
    section's `extra` sets gradient_checkpointing_kwargs itself.

    DDP cannot re-enter the graph. Unsloth's GPU-side config rewrites use_reentrant to True in its __init__ whenever
    checkpointing is on, so the value passed to the constructor never arrives; with ddp_find_unused_parameters
    (full fine-tuning) that crashes the first backward ("marked as ready twice", unsloth/models/_ddp_defaults.py).
    """
    if ranks.in_worker() and args.gradient_checkpointing and "gradient_checkpointing_kwargs" not in extra:
        args.gradient_checkpointing_kwargs = {**(args.gradient_checkpointing_kwargs or {}), "use_reentrant": False}
    return args


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
