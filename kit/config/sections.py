"""The sections of a run's config, one pydantic model per part of a run, each field with its help beside it
(`description=`): kit.config.reference renders them into the settings page (docs/settings.md) and `kit train --help`.
Each section's docstring says which module reads it. kit.config.schema gathers them into RunConfig.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kit.config.formats import FORMAT_NAMES
from kit.outputs import RunDir

# Named because more than the schema needs them: the CLI's --profile / --launcher choices and the save step
# read them back through `choices` (PROFILES, LAUNCHERS, SAVE_FORMATS in kit.config.schema), so there is one
# list of each.
Profile = Literal["auto", "smoke", "full"]
Launcher = Literal["ddp", "zero2", "zero3", "fsdp"]
# TRL 1.15's loss types, and gspo: the kit's name for TRL's GSPO settings (kit.train.stages.grpo.GSPO)
LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo", "gspo"]
SaveFormatName = Literal[FORMAT_NAMES]  # one entry per save format in kit/config/formats.py


class Section(BaseModel):
    # allow_inf_nan: a learning rate, temperature or beta of inf or nan trains into non-finite weights
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class ModelConfig(Section):
    """What to load and how (read by kit.models.loader)."""

    name: str = Field("unsloth/Qwen2.5-1.5B-Instruct", description="hub id, local folder, or `kit:tiny-llama`")
    max_seq_length: int = Field(1024, gt=0, le=1_048_576, description="prompt + completion tokens")
    load_in_4bit: bool = Field(True, description="NF4 weights (GPU only): ~4x less memory, slightly slower")
    fast_inference: bool = Field(True, description="vLLM generation (GPU only): several times faster rollouts")
    gpu_memory_utilization: float = Field(0.6, gt=0, le=1,
                                          description="share of GPU memory vLLM reserves (with fast_inference)")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto", description="the weights' dtype; auto: bfloat16 where the GPU has it, else float16; float32 on CPU")
    lora_rank: int = Field(16, gt=0, description="higher: more capacity, more memory")
    lora_alpha: int = Field(32, gt=0, description="LoRA scale; usually 2 x lora_rank")
    lora_dropout: float = Field(0.0, ge=0, lt=1, description="Unsloth is fastest at 0")
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        min_length=1,
        description="the layers LoRA adapts",
    )
    gradient_checkpointing: Literal["unsloth", "true", "false"] = Field(
        "unsloth", description="unsloth: offloaded, least memory; true: plain recomputation; false: off, fastest, "
        "most memory")
    full_finetuning: bool = Field(False, description="train every weight instead of LoRA (small models; the CPU demo)")
    finetune_vision_layers: bool = Field(False, description="vision-language models: LoRA on the vision tower "
                                         "too, not only the language layers (not with fast_inference on a GPU)")
    vllm_standby: bool = Field(False, description="GPU: vLLM's memory is freed while training runs (Unsloth standby; "
                               "TRL's vLLM sleep mode with launch.num_processes > 1): more room for training, "
                               "a little time per step to wake it")


class DataConfig(Section):
    """Where the prompts come from (read by the recipe's preparer and kit.data)."""

    path: str | None = Field(None, description="null: the recipe's hub dataset; a `.jsonl`/`.csv`/`.parquet` "
                             "file; or `sample` (the recipe's sample data)")
    split: str = Field("train", description="the dataset split to train on")
    max_prompt_length: int = Field(256, gt=0, description="longer prompts (tokens) are dropped, with a count printed")
    limit: int | None = Field(None, gt=0, description="use only the first N rows (null: all)")
    system_prompt: str | None = Field(None, description="put first in every prompt that has no system message")


class GRPOSection(Section):
    """GRPO settings handed to TRL's GRPOConfig (read by kit.train.stages.grpo)."""

    learning_rate: float = Field(5e-6, gt=0, description="5e-6 safe; 1e-5 faster and riskier")
    per_device_train_batch_size: int = Field(
        8, gt=0, description="completions per process per step (prompts x num_generations)")
    gradient_accumulation_steps: int = Field(1, gt=0, description="steps summed into each optimizer update")
    num_generations: int = Field(8, ge=2, description="group size, 8-16: GRPO needs at least 2 to compare")
    max_completion_length: int = Field(256, gt=0, description="tokens generated per completion, at most")
    max_steps: int = Field(-1, description="optimizer steps; -1: run num_train_epochs")
    num_train_epochs: float = Field(1.0, gt=0, description="passes over the data when max_steps is -1")
    beta: float = Field(0.0, ge=0, description="KL weight; 0 (TRL's default) loads no reference model")
    temperature: float = Field(1.0, gt=0, lt=10, description="sampling temperature; Unsloth refuses 10 and above")
    # The loss, as TRL names it (or gspo); TRL's defaults (tests/config/test_trl_fields.py keeps them in step with TRL).
    # No loss is called better here: none has been compared on the kit's runs yet (bench/loss_types.py).
    loss_type: LossType = Field(
        "dapo", description="the loss: dapo divides by the batch's token count; grpo averages each completion's "
        "tokens; dr_grpo divides by a constant (max_completion_length); gspo: grpo with one importance ratio per "
        "completion (TRL's importance_sampling_level sequence), whose update is grpo's while training stays on-policy "
        "(docs/settings.md, Loss types)")
    scale_rewards: Literal["group", "batch", "none"] = Field(
        "group", description="advantages are divided by the group's reward std, the batch's, or nothing; none is "
        "Dr. GRPO's, and the default with loss_type dr_grpo")
    mask_truncated_completions: bool = Field(
        False, description="true: cut-off completions leave the loss (DAPO); pair with a length cap")
    # Both resolved by the kit from the loss, never left to Unsloth (docs/settings.md).
    epsilon: float | None = Field(None, gt=0, description="clip range of the policy ratio; null: 0.2 (TRL's), or 3e-4 "
                                  "with loss_type gspo (the GSPO paper's)")
    epsilon_high: float | None = Field(None, gt=0, description="upper clip (DAPO's clip-higher: 0.28); null: epsilon, "
                                       "4e-4 with gspo and epsilon unset, or 5.0 with loss_type cispo (its cap on the "
                                       "importance weight)")
    num_iterations: int = Field(1, gt=0, description="optimizer passes over each generated batch; >1 reuses rollouts")
    chat_template_kwargs: dict[str, Any] | None = Field(
        None, description="passed to the chat template, e.g. `{enable_thinking: false}` for Qwen3; evaluation too")
    max_tool_calling_iterations: int | None = Field(
        4, gt=0, description="with a recipe's TOOLS or ENVIRONMENT: rounds of tool calls per completion, at most "
        "(null: no limit); max_completion_length is the budget of all turns together; evaluation too")
    # The kit's own (kit.tools.budget), not GRPOConfig's: a degenerate policy's flood of calls stalls every step.
    tool_calls_per_turn: int = Field(
        8, gt=0, description="with tools: calls one reply may make; one more ends the rollout's tool use with an "
        "error result the model reads; evaluation too")
    tool_seconds_per_rollout: float = Field(
        60.0, gt=0, description="with tools: seconds of tool time one rollout may use; the call after ends its "
        "tool use with an error result; evaluation too")
    lr_scheduler_type: str = Field("cosine", description="transformers' name: cosine, linear, constant, ...")
    warmup_steps: int = Field(0, ge=0, description="steps the learning rate ramps up over")
    weight_decay: float = Field(0.1, ge=0, description="AdamW's weight decay")
    adam_beta1: float = Field(0.9, description="AdamW's beta1")
    adam_beta2: float = Field(0.99, description="AdamW's beta2")
    max_grad_norm: float = Field(0.1, gt=0, description="gradients are clipped to this norm")
    optim: str = Field("adamw_8bit", description="transformers' optimizer name; 8-bit Adam: ~75% less optimizer "
                       "memory (GPU only)")
    logging_steps: int = Field(1, gt=0, description="steps between logged metrics (the health checks read each)")
    memory_probe: bool | None = Field(
        None, description="one step at the run's largest shapes before training, thrown away: its peak recorded beside "
        "the plan's, and a run the GPU cannot hold stopped in the first minute; null: on with a GPU")
    learnability_check: bool = Field(
        True, description="before the first step, sample one group for each of a few training prompts and say "
        "whether their rewards differ (GRPO learns from nothing else), with the fix; it warns, never stops the run")
    learnability_prompts: int = Field(6, gt=0, description="training prompts the learnability check samples a "
                                      "group for")
    save_minutes: float | None = Field(
        10, gt=0, description="a checkpoint at least this often (null: off), so a crash loses less")
    save_steps: int = Field(100, gt=0, description="and a checkpoint every this many steps (also on Ctrl-C / SIGTERM)")
    save_total_limit: int = Field(2, gt=0, description="keep the latest this many checkpoints")
    report_to: str = Field("none", description="where metrics also go (sft too): none, wandb or tensorboard")
    extra: dict[str, Any] = Field(default_factory=dict, description="any other GRPOConfig field, passed through "
                                  "(checked against TRL's field names, with a did-you-mean)")

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

    learning_rate: float = Field(2e-4, gt=0, description="the warm start's learning rate")
    per_device_train_batch_size: int = Field(8, gt=0, description="worked answers per process per step")
    gradient_accumulation_steps: int = Field(1, gt=0, description="steps summed into each optimizer update")
    max_steps: int = Field(100, gt=0, description="optimizer steps")
    lr_scheduler_type: str = Field("linear", description="transformers' name: linear, cosine, constant, ...")
    warmup_steps: int = Field(0, ge=0, description="steps the learning rate ramps up over")
    weight_decay: float = Field(0.0, ge=0, description="AdamW's weight decay")
    optim: str = Field("adamw_8bit", description="transformers' optimizer name (8-bit Adam: GPU only)")
    logging_steps: int = Field(10, gt=0, description="steps between logged metrics")
    extra: dict[str, Any] = Field(default_factory=dict, description="any other SFTConfig field, passed through "
                                  "(checked against TRL's field names, with a did-you-mean)")


class EvalConfig(Section):
    """Held-out evaluation before and after training (read by kit.train.evaluation and kit.eval)."""

    n: int = Field(200, ge=0, description="prompts scored before and after training; 0 turns evaluation off")
    split: str = Field("test", description="the hub dataset's held-out split")
    path: str | None = Field(None, description="held-out file, for a local data.path; null: eval.holdout of that "
                             "file is held out")
    holdout: float = Field(0.1, ge=0, lt=1, description="share of a local data file held out when eval.path is unset; "
                           "0: none")
    max_new_tokens: int | None = Field(None, gt=0, description="tokens per answer; null: grpo.max_completion_length")
    batch_size: int = Field(32, gt=0, description="prompts generated together")
    every_steps: int | None = Field(None, ge=0, description="GRPO steps between held-out checks while training "
                                    "(eval.during_n prompts, greedy, the recipe's judges); 0: none; null: 25 on a "
                                    "GPU, none on a CPU")
    during_n: int = Field(32, gt=0, description="held-out prompts scored at each check while training (the first "
                          "ones, the same each time)")


class MonitorConfig(Section):
    """Live health checks and sample completions (read by kit.monitor.health and kit.monitor.samples)."""

    sample_every: int = Field(10, gt=0, description="steps between sample completions written to "
                              f"`{RunDir('OUT').samples}`")
    samples: int = Field(3, ge=0, description="completions written each time")
    window: int = Field(20, ge=4, description="steps over which \"reward flat\" is judged")


class SaveConfig(Section):
    """What to write at the end of training (read by kit.export.save, in kit.config.formats' order)."""

    formats: list[SaveFormatName] = Field(default_factory=lambda: ["lora", "merged_16bit"],
                                          description="what to write: adapter, merged model, GGUF, a hub upload")
    merged_dtype: Literal["bfloat16", "float16"] = Field("bfloat16", description="the merged model's weights")
    quant: list[str] = Field(default_factory=lambda: ["q4_k_m"], min_length=1,
                             description="GGUF types (q4_k_m, q8_0, f16, ...), with gguf in save.formats")
    hub_repo: str | None = Field(None, description="with hub in save.formats: the model repository to upload to, "
                                 "e.g. `me/qwen-gsm8k`")
    hub_private: bool = Field(False, description="create that repository private")


class LaunchConfig(Section):
    """How many processes train (read by kit.train.launch). One is the Unsloth single-GPU path; more start
    `accelerate launch` with one of the kit's configs in kit/train/launch/ and load with transformers + PEFT."""

    num_processes: int = Field(1, gt=0, description="one per GPU of this machine; on a machine without GPUs, CPU "
                               "processes (tests)")
    launcher: Launcher = Field("ddp", description="how the processes share the work: see "
                               "`kit/train/launch/<launcher>.yaml` for when to use each")
    num_machines: int | None = Field(None, gt=0, description="machines in the run, each starting the same `kit "
                                     "train` (null: SLURM_NNODES under SLURM, else 1)")
    machine_rank: int | None = Field(None, ge=0, description="this machine's number, 0 on the main one (null: "
                                     "SLURM_NODEID under SLURM, else 0)")
    main_address: str | None = Field(None, description="the main machine's address, which the others reach (null: "
                                     "the first host of SLURM_JOB_NODELIST under SLURM)")
    main_port: int | None = Field(None, gt=0, lt=65536, description="the port on the main machine (null: 29500 with "
                                  "several machines; a free one on one machine)")

    @property
    def total_processes(self) -> int:
        """Every machine's processes: the ranks that share each step."""
        return self.num_processes * (self.num_machines or 1)

    @property
    def several_processes(self) -> bool:
        """More than one training process in the run, on this machine or across machines."""
        return self.total_processes > 1

    @model_validator(mode="after")
    def _machine_in_range(self) -> LaunchConfig:
        if self.num_machines and self.machine_rank is not None and self.machine_rank >= self.num_machines:
            raise ValueError(f"launch.machine_rank={self.machine_rank} with launch.num_machines={self.num_machines}: "
                             f"machines are numbered 0 to {self.num_machines - 1}")
        return self
