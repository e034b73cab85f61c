"""The rules that span fields, checked in one place before anything is loaded, and the smallest change
that satisfies the batch rule. RunConfig's validator calls `cross_field_problems`.

This module reads the config by its attributes only: kit.config.schema imports it, so importing the
schema back would make the two modules import each other (the names below are for type checkers).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from kit.config.formats import format_problems
from kit.config.stages import stage_plans, stage_problems
from kit.config.trl_fields import GRPO_CONFIG_FIELDS, SFT_CONFIG_FIELDS, TRL_VERSION

if TYPE_CHECKING:
    from kit.config.schema import RunConfig
    from kit.config.sections import GRPOSection

# Launchers that split the weights across processes: no single process holds the whole model.
SHARDED = ("zero3", "fsdp")


def cross_field_problems(cfg: RunConfig) -> list[str]:
    """Every rule that spans fields, each broken one as a sentence naming the keys and the fix."""
    problems = batch_problems(cfg) + model_problems(cfg) + multi_process_vllm_problems(cfg)
    problems += loss_problems(cfg.grpo, vllm_generation(cfg)) + stage_and_save_problems(cfg) + launcher_problems(cfg)
    problems += extra_problems("grpo", cfg.grpo, "GRPOConfig", GRPO_CONFIG_FIELDS)
    problems += extra_problems("sft", cfg.sft, "SFTConfig", SFT_CONFIG_FIELDS)
    # rewards.<name> takes any finite weight (the schema refuses NaN and inf): 0 drops the reward, a negative
    # one makes it a penalty, as in a RewardBundle (TRL adds up weight x value)
    return problems


def extra_problems(name: str, section, trl_class: str, trl_fields: frozenset) -> list[str]:
    """`grpo.extra` / `sft.extra` keys that TRL's config class does not have, or that have a setting of their own."""
    problems = []
    own = set(type(section).model_fields) - {"extra"}
    for key in sorted(section.extra):
        if key in own:
            problems.append(f"{name}.extra.{key}: set it as {name}.{key}, not in extra")
        elif key not in trl_fields:
            close = difflib.get_close_matches(key, sorted(trl_fields | own), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(not_a_trl_setting(name, key, trl_class, f"TRL {TRL_VERSION}") + hint)
    return problems


def not_a_trl_setting(section: str, key: str, trl_class: str, version: str) -> str:
    article = "an" if trl_class[0] in "AEFHILMNORSX" else "a"  # read letter by letter: an SFTConfig, a GRPOConfig
    return f"{section}.extra.{key}: not {article} {trl_class} setting in {version}"


def batch_problems(cfg: RunConfig) -> list[str]:
    """A step must hold whole groups of generations, leave room for the prompt, and end."""
    problems = []
    g, processes = cfg.grpo, cfg.launch.total_processes
    if cfg.completions_per_step % g.num_generations:
        problems.append(
            f"grpo: per_device_train_batch_size ({g.per_device_train_batch_size}) x gradient_accumulation_steps "
            f"({g.gradient_accumulation_steps}) x {processes_label(cfg)} ({processes}) = {cfg.completions_per_step} "
            f"completions per step, which is not a multiple of num_generations ({g.num_generations}); "
            f"{nearest_valid_batch(g, processes)}"
        )
    if g.max_completion_length >= cfg.model.max_seq_length:
        problems.append(
            f"grpo.max_completion_length ({g.max_completion_length}) leaves no room for the prompt in "
            f"model.max_seq_length ({cfg.model.max_seq_length}); raise max_seq_length or lower max_completion_length"
        )
    if g.max_steps == 0 or g.max_steps < -1:
        problems.append(f"grpo.max_steps ({g.max_steps}) must be a positive number of steps, or -1 to use "
                        "num_train_epochs")
    return problems


def model_problems(cfg: RunConfig) -> list[str]:
    problems = []
    if cfg.model.full_finetuning and cfg.model.load_in_4bit:
        problems.append("model.full_finetuning trains every weight, which 4-bit weights cannot hold; "
                        "set model.load_in_4bit=false (or train LoRA adapters)")
    if cfg.model.full_finetuning and cfg.model.fast_inference:
        # Unsloth sends full fine-tuning to FastModel, which raises NotImplementedError for vLLM
        problems.append("model.full_finetuning with model.fast_inference: Unsloth's vLLM generation serves LoRA "
                        "adapters only; set model.fast_inference=false (generation with transformers), or train LoRA")
    if cfg.model.vllm_standby and not cfg.model.fast_inference:
        problems.append("model.vllm_standby frees vLLM's memory between generations, and model.fast_inference is "
                        "false (no vLLM); set model.fast_inference=true or drop vllm_standby")
    return problems


def vllm_generation(cfg: RunConfig) -> bool:
    return cfg.model.fast_inference or cfg.grpo.extra.get("use_vllm", False)


def loss_problems(g: GRPOSection, vllm: bool) -> list[str]:
    """Loss settings that cannot work, or that Unsloth's GPU trainer would change (so a GPU run would train
    differently from the CPU run of the same config: kit.train.stages.grpo.trainer_settings)."""
    problems = []
    level = g.extra.get("importance_sampling_level")
    if g.loss_type == "gspo" and level not in (None, "sequence"):
        problems.append(f"grpo.loss_type gspo is one importance ratio per completion (importance_sampling_level="
                        f"sequence), and grpo.extra.importance_sampling_level is {level}: drop that key, or choose "
                        "loss_type grpo for a ratio per token")
    corrected = vllm and g.extra.get("vllm_importance_sampling_correction", True)  # pinned on (PINNED_DEFAULTS)
    vllm_mode = g.extra.get("vllm_importance_sampling_mode", "sequence_mask")  # TRL's default
    if g.loss_type == "vespo" and corrected and vllm_mode not in ("token_truncate", "token_mask"):
        # TRL's trainer raises when it is built (Unsloth's grpo_accumulated_loss at the first step), after loading
        problems.append(f"grpo.loss_type vespo with vLLM generation (model.fast_inference) needs a per-token vLLM "
                        f"correction, and its mode is {vllm_mode} (TRL refuses it once the model has loaded): "
                        "set grpo.extra.vllm_importance_sampling_mode=token_truncate (or token_mask), or "
                        "model.fast_inference=false")
    if g.loss_type == "luspo" and level != "sequence":
        problems.append("grpo.loss_type luspo is a sequence-level loss: set grpo.extra.importance_sampling_level="
                        "sequence, or choose another loss_type")
    if g.loss_type == "dr_grpo" and g.scale_rewards == "group":
        problems.append("grpo.loss_type dr_grpo with grpo.scale_rewards=group: Dr. GRPO does not divide by the "
                        "group's spread, and Unsloth's GPU trainer turns that scaling off for dr_grpo whatever is "
                        "set; set grpo.scale_rewards=none (or batch), or choose another loss_type")
    if g.loss_type == "cispo" and g.epsilon_high is not None and g.epsilon_high < 1:
        problems.append(f"grpo.loss_type cispo caps each importance weight at grpo.epsilon_high itself, so "
                        f"{g.epsilon_high} caps every weight below 1; leave epsilon_high unset (5.0, ScaleRL's "
                        "value) or set one of 4 to 8")
    return problems


def multi_process_vllm_problems(cfg: RunConfig) -> list[str]:
    """4-bit weights with vLLM in several processes: TRL merges the LoRA into the packed 4-bit weights to send
    them to vLLM, which fails (TRL issues #3654 and #3466, PEFT #2501). One GPU shares them through Unsloth."""
    vllm = cfg.model.fast_inference or cfg.grpo.extra.get("use_vllm", False)
    if not cfg.launch.several_processes or not (cfg.model.load_in_4bit and vllm):
        return []
    return [(f"launch.num_processes={cfg.launch.num_processes} with model.load_in_4bit and vLLM generation: TRL "
             "cannot hand 4-bit weights merged with LoRA to vLLM (TRL #3654). Set model.load_in_4bit=false "
             "(16-bit weights, vLLM works in every process), or model.fast_inference=false (4-bit, generation "
             "with transformers, slower), or train on one GPU (Unsloth shares 4-bit weights with vLLM)")]


def stage_and_save_problems(cfg: RunConfig) -> list[str]:
    problems = stage_problems(cfg)
    for index, plan in enumerate([] if problems else stage_plans(cfg)):  # a stage's own GRPO settings
        if plan.kind == "grpo" and plan.cfg.grpo != cfg.grpo:
            problems += [f"stages[{index}]: {p}" for p in loss_problems(plan.cfg.grpo, vllm_generation(plan.cfg))]
    problems += format_problems(cfg.save.formats)  # a format without the one it is made from
    if "hub" in cfg.save.formats and not cfg.save.hub_repo:
        problems.append("save.formats has hub but save.hub_repo is not set: name the model repository, e.g. "
                        "save.hub_repo=your-name/qwen-gsm8k-grpo (make train HUB_REPO=...)")
    if cfg.save.hub_repo:
        problems += [f"save.hub_repo: {p}" for p in [repo_id_problem(cfg.save.hub_repo)] if p]
    return problems


def repo_id_problem(repo_id: str) -> str | None:
    """Why `repo_id` cannot name a hub repository (huggingface_hub's own rule), or None."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return (f"'{repo_id}' is not a hub repository name; write it as your-name/model-name (letters, digits, "
                "'-', '_' and '.')")
    return None


def launcher_problems(cfg: RunConfig) -> list[str]:
    """What the multi-process launchers cannot do with the chosen optimizer or weights."""
    problems = []
    launcher = cfg.launch.launcher
    if launcher == "fsdp" and cfg.grpo.optim.startswith(("adamw_8bit", "paged_adamw_8bit", "adamw_bnb_8bit")):
        problems.append(f"launch.launcher=fsdp with grpo.optim={cfg.grpo.optim}: bitsandbytes' 8-bit Adam does not "
                        "handle FSDP2's sharded weights; set grpo.optim=adamw_torch (or use launcher zero3)")
    if launcher in SHARDED and cfg.model.load_in_4bit:
        problems.append(f"launch.launcher={launcher} shards 16-bit weights across GPUs; the kit does not "
                        "shard 4-bit ones: set model.load_in_4bit=false, or use launcher ddp or zero2")
    if launcher in SHARDED and cfg.model.full_finetuning:
        problems.append(f"model.full_finetuning with launch.launcher={launcher}: the kit saves sharded "
                        "LoRA adapters only; train LoRA, or use launcher ddp or zero2 for full fine-tuning")
    return problems


def processes_label(cfg: RunConfig) -> str:
    return "launch.num_processes x num_machines" if (cfg.launch.num_machines or 1) > 1 else "launch.num_processes"


def nearest_valid_batch(g: GRPOSection, procs: int) -> str:
    """Propose the smallest change that makes a step hold whole groups of generations."""
    n, accum = g.num_generations, g.gradient_accumulation_steps
    up = g.per_device_train_batch_size
    while (up * accum * procs) % n:
        up += 1
    down = g.per_device_train_batch_size
    while down > 0 and (down * accum * procs) % n:
        down -= 1
    options = [f"per_device_train_batch_size={up}"]
    if down > 0:
        options.append(f"per_device_train_batch_size={down}")
    accum_up = accum
    while (g.per_device_train_batch_size * accum_up * procs) % n:
        accum_up += 1
    options.append(f"gradient_accumulation_steps={accum_up}")
    return "nearest valid: " + " or ".join(options)
