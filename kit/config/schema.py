"""The schema: one pydantic section per part of a run, and RunConfig, which holds them and checks the rules
that span fields (kit.config.rules) whenever it is built or changed. `choices` reads a field's allowed values,
so the CLI offers the same ones the schema accepts.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kit.config.formats import FORMAT_NAMES
from kit.config.rules import cross_field_problems
from kit.errors import KitError

# Named because more than the schema needs them: the CLI's --profile / --launcher choices and the save step
# read them back through `choices` (PROFILES, LAUNCHERS, SAVE_FORMATS below), so there is one list of each.
Profile = Literal["auto", "smoke", "full"]
Launcher = Literal["ddp", "zero2", "zero3", "fsdp"]
LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"]  # TRL 1.15's
SaveFormatName = Literal[FORMAT_NAMES]  # one entry per save format in kit/config/formats.py


class Section(BaseModel):
    # allow_inf_nan: a learning rate, temperature or beta of inf or nan trains into non-finite weights
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class ModelConfig(Section):
    """What to load and how (read by kit.models.loader)."""

    name: str = "unsloth/Qwen2.5-1.5B-Instruct"  # hub id, local path, or kit:tiny-llama
    max_seq_length: int = Field(1024, gt=0, le=1_048_576)  # prompt + completion tokens
    load_in_4bit: bool = True  # NF4 weights: ~4x less memory, slightly slower
    fast_inference: bool = True  # vLLM generation (GPU only): several times faster rollouts
    gpu_memory_utilization: float = Field(0.6, gt=0, le=1)  # share vLLM reserves (fast_inference)
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    lora_rank: int = Field(16, gt=0)  # higher: more capacity, more memory
    lora_alpha: int = Field(32, gt=0)  # usually 2 x rank
    lora_dropout: float = Field(0.0, ge=0, lt=1)  # Unsloth is fastest at 0
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        min_length=1,
    )
    gradient_checkpointing: Literal["unsloth", "true", "false"] = "unsloth"  # unsloth: offloaded, least memory
    full_finetuning: bool = False  # train every weight instead of LoRA (small models; the CPU demo)
    vllm_standby: bool = False  # GPU: vLLM's memory is released while training runs (Unsloth standby; TRL's
    # vLLM sleep mode with NPROC > 1): more room for training, a little time per step to wake it


class DataConfig(Section):
    """Where the prompts come from (read by the recipe's preparer and kit.data)."""

    path: str | None = None  # None: the recipe's hub dataset; a .jsonl/.csv/.parquet file; or "sample"
    split: str = "train"
    max_prompt_length: int = Field(256, gt=0)  # longer prompts are dropped, with a count printed
    limit: int | None = Field(None, gt=0)  # use only the first N rows
    system_prompt: str | None = None  # put first in every prompt that has no system message


class GRPOSection(Section):
    """GRPO settings handed to TRL's GRPOConfig (read by kit.train.stages.grpo)."""

    learning_rate: float = Field(5e-6, gt=0)  # 5e-6 safe, 1e-5 faster and riskier
    per_device_train_batch_size: int = Field(8, gt=0)  # prompts x generations completions per device step
    gradient_accumulation_steps: int = Field(1, gt=0)
    num_generations: int = Field(8, ge=2)  # group size: 8-16; GRPO needs at least 2 to compare
    max_completion_length: int = Field(256, gt=0)
    max_steps: int = Field(-1)  # -1: run num_train_epochs
    num_train_epochs: float = Field(1.0, gt=0)
    beta: float = Field(0.0, ge=0)  # KL weight; 0 (TRL's default) loads no reference model
    temperature: float = Field(1.0, gt=0, lt=10)  # Unsloth refuses 10 and above (sampling too erratic)
    # The loss, as TRL names it; TRL's defaults (tests/config/test_trl_fields.py keeps them in step with TRL).
    loss_type: LossType = "dapo"  # dapo: tokens weighted alike across the batch, no length bias; grpo: the paper's
    scale_rewards: Literal["group", "batch", "none"] = "group"  # none: Dr. GRPO's (the default with loss_type dr_grpo)
    mask_truncated_completions: bool = False  # true: cut-off completions leave the loss (DAPO); pair with a length cap
    epsilon: float = Field(0.2, gt=0)  # clip range of the policy ratio
    epsilon_high: float | None = Field(None, gt=0)  # upper clip (DAPO's clip-higher: 0.28); None: epsilon, or
    # 5.0 with cispo (its cap on the importance weight, ScaleRL's value); resolved by the kit, never left to Unsloth
    num_iterations: int = Field(1, gt=0)  # optimizer passes over each generated batch: >1 reuses the rollouts
    chat_template_kwargs: dict[str, Any] | None = None  # e.g. {enable_thinking: false} for Qwen3; evaluation too
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.1, ge=0)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.99
    max_grad_norm: float = Field(0.1, gt=0)
    optim: str = "adamw_8bit"  # 8-bit Adam: ~75% less optimizer memory
    logging_steps: int = Field(1, gt=0)
    save_minutes: float | None = Field(10, gt=0)  # a checkpoint at least this often (None: off): a crash loses less
    save_steps: int = Field(100, gt=0)  # and every this many steps (checkpoints also on Ctrl-C / SIGTERM)
    save_total_limit: int = Field(2, gt=0)  # keep the latest K checkpoints
    report_to: str = "none"  # or "wandb", "tensorboard"
    extra: dict[str, Any] = Field(default_factory=dict)  # any other GRPOConfig field, passed through

    @model_validator(mode="before")
    @classmethod
    def _dr_grpo_does_not_scale(cls, data: Any) -> Any:
        """loss_type dr_grpo without a scale_rewards of its own: none, as the Dr. GRPO paper (and Unsloth) has it."""
        if isinstance(data, dict) and data.get("loss_type") == "dr_grpo" and "scale_rewards" not in data:
            data = {**data, "scale_rewards": "none"}
        return data


class SFTSection(Section):
    """The supervised warm start, run when `stages` includes sft (read by kit.train.stages.sft): it teaches the answer
    format from the recipe's worked answers before GRPO, so GRPO's rewards have something to compare."""

    learning_rate: float = Field(2e-4, gt=0)
    per_device_train_batch_size: int = Field(8, gt=0)
    gradient_accumulation_steps: int = Field(1, gt=0)
    max_steps: int = Field(100, gt=0)
    lr_scheduler_type: str = "linear"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.0, ge=0)
    optim: str = "adamw_8bit"
    logging_steps: int = Field(10, gt=0)
    extra: dict[str, Any] = Field(default_factory=dict)  # any other SFTConfig field, passed through


class EvalConfig(Section):
    """Held-out evaluation before and after training (read by kit.train.evaluation)."""

    n: int = Field(200, ge=0)  # prompts scored before and after training; 0 turns evaluation off
    split: str = "test"
    path: str | None = None  # held-out file for a local data.path; without one, eval.holdout of that file is held out
    holdout: float = Field(0.1, ge=0, lt=1)  # share of a local data file held out when eval.path is unset; 0: none
    max_new_tokens: int | None = Field(None, gt=0)  # default: grpo.max_completion_length
    batch_size: int = Field(32, gt=0)


class MonitorConfig(Section):
    """Live health checks and sample completions (read by kit.monitor.health)."""

    sample_every: int = Field(10, gt=0)  # steps between sample completions in samples.jsonl
    samples: int = Field(3, ge=0)
    window: int = Field(20, ge=4)  # steps over which "reward flat" is judged


class SaveConfig(Section):
    """What to write at the end of training (read by kit.export.save, in kit.config.formats' order)."""

    formats: list[SaveFormatName] = Field(default_factory=lambda: ["lora", "merged_16bit"])
    merged_dtype: Literal["bfloat16", "float16"] = "bfloat16"
    quant: list[str] = Field(default_factory=lambda: ["q4_k_m"], min_length=1)  # GGUF types, with "gguf" in formats
    hub_repo: str | None = None  # with "hub" in formats: the model repository to upload to, e.g. me/qwen-gsm8k
    hub_private: bool = False  # create that repository private


class LaunchConfig(Section):
    """How many processes train (read by kit.launch). One is the Unsloth single-GPU path; more start
    `accelerate launch` with one of the kit's configs in kit/launch/ and load with transformers + PEFT."""

    num_processes: int = Field(1, gt=0)  # one per GPU; on a machine without GPUs, CPU processes (for tests)
    launcher: Launcher = "ddp"  # see kit/launch/<launcher>.yaml for when to use it


class RunConfig(Section):
    recipe: str = "gsm8k"
    profile: Profile = "auto"  # auto: smoke without a GPU, full with one
    output_dir: str | None = None  # default: outputs/<recipe>-<timestamp>
    seed: int = 3407
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    sft: SFTSection = Field(default_factory=SFTSection)
    stages: list[Literal["sft", "grpo"]] = Field(default_factory=lambda: ["grpo"], min_length=1)  # in order
    eval: EvalConfig = Field(default_factory=EvalConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)
    save: SaveConfig = Field(default_factory=SaveConfig)
    launch: LaunchConfig = Field(default_factory=LaunchConfig)
    rewards: dict[str, float] = Field(default_factory=dict)  # override a reward's weight by name; 0 drops it
    adaptive_rewards: list[str] = Field(default_factory=list)  # these weights follow the running success rate
    # Where code rewards run model-written code (kit/sandbox): auto takes bubblewrap, else the kit's own
    # namespaces (root); `unisolated` (no namespaces, only seccomp and limits) must be asked for by name.
    code_isolation: Literal["auto", "bubblewrap", "namespaces", "unisolated"] = "auto"

    @property
    def completions_per_step(self) -> int:
        """TRL's generation_batch_size: every process's batch, over its accumulation steps."""
        g = self.grpo
        return g.per_device_train_batch_size * g.gradient_accumulation_steps * self.launch.num_processes

    @model_validator(mode="after")
    def _check_cross_field_rules(self) -> RunConfig:
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self


def choices(section: type[BaseModel], field: str) -> tuple[str, ...]:
    """The values a Literal field accepts, e.g. choices(LaunchConfig, "launcher") for argparse's choices=;
    for a list of Literals (save.formats), the values of its items."""
    if field not in section.model_fields:
        raise KitError(f"{section.__name__} has no field '{field}'; fields: {', '.join(section.model_fields)}")
    annotation = section.model_fields[field].annotation
    while get_origin(annotation) is not Literal:
        inner = get_args(annotation)  # list[X] -> (X,); anything without a Literal inside ends with ()
        if not inner:
            raise KitError(f"{section.__name__}.{field} is not a Literal field, so it has no fixed choices")
        annotation = inner[0]
    return get_args(annotation)


PROFILES = choices(RunConfig, "profile")
LAUNCHERS = choices(LaunchConfig, "launcher")
SAVE_FORMATS = choices(SaveConfig, "formats")
