"""The run configuration: one typed schema for the YAML file, the CLI and the recipe defaults.

Layers, later wins: the schema's defaults < the recipe's DEFAULTS < the profile (smoke / full)
< the YAML file < CLI flags. Each section is read by one module: `model` by the loader, `data` by
the data step, `grpo` by the runner's trainer, `save` by the merge step.

    python -m kit train gsm8k --config my.yaml grpo.learning_rate=1e-5 model.lora_rank=32
"""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kit.errors import KitError

SMOKE, FULL = "smoke", "full"
TINY_MODEL = "kit:tiny-llama"  # built on the spot by kit.models.tiny; no download
SAMPLE_DATA = "sample"  # the recipe's own small data file, written by the kit
# Launchers that split the weights across processes: no single process holds the whole model.
SHARDED = ("zero3", "fsdp")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(Section):
    """What to load and how (read by kit.models.training)."""

    name: str = "unsloth/Qwen2.5-1.5B-Instruct"  # hub id, local path, or kit:tiny-llama
    max_seq_length: int = Field(1024, gt=0)  # prompt + completion tokens
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


class DataConfig(Section):
    """Where the prompts come from (read by the recipe's preparer and kit.data)."""

    path: str | None = None  # None: the recipe's hub dataset; a .jsonl/.csv/.parquet file; or "sample"
    split: str = "train"
    max_prompt_length: int = Field(256, gt=0)  # longer prompts are dropped, with a count printed
    limit: int | None = Field(None, gt=0)  # use only the first N rows
    system_prompt: str | None = None  # put first in every prompt that has no system message


class GRPOSection(Section):
    """GRPO settings handed to TRL's GRPOConfig (read by kit.train.run)."""

    learning_rate: float = Field(5e-6, gt=0)  # 5e-6 safe, 1e-5 faster and riskier
    per_device_train_batch_size: int = Field(8, gt=0)  # prompts x generations completions per device step
    gradient_accumulation_steps: int = Field(1, gt=0)
    num_generations: int = Field(8, ge=2)  # group size: 8-16; GRPO needs at least 2 to compare
    max_completion_length: int = Field(256, gt=0)
    max_steps: int = Field(-1)  # -1: run num_train_epochs
    num_train_epochs: float = Field(1.0, gt=0)
    beta: float = Field(0.0, ge=0)  # KL weight; 0 (TRL's default) loads no reference model
    temperature: float = Field(1.0, gt=0)
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
    """Held-out evaluation before and after training (read by kit.eval.evaluate via the runner)."""

    n: int = Field(200, ge=0)  # prompts scored before and after training; 0 turns evaluation off
    split: str = "test"
    path: str | None = None  # held-out file; needed when data.path is a local file
    max_new_tokens: int | None = Field(None, gt=0)  # default: grpo.max_completion_length
    batch_size: int = Field(32, gt=0)


class MonitorConfig(Section):
    """Live health checks and sample completions (read by kit.monitor.health)."""

    sample_every: int = Field(10, gt=0)  # steps between sample completions in samples.jsonl
    samples: int = Field(3, ge=0)
    window: int = Field(20, ge=4)  # steps over which "reward flat" is judged


class SaveConfig(Section):
    """What to write at the end of training (read by kit.export.merged)."""

    formats: list[Literal["lora", "merged_16bit", "gguf"]] = Field(default_factory=lambda: ["lora", "merged_16bit"])
    merged_dtype: Literal["bfloat16", "float16"] = "bfloat16"
    quant: list[str] = Field(default_factory=lambda: ["q4_k_m"], min_length=1)  # GGUF types, with "gguf" in formats


class LaunchConfig(Section):
    """How many processes train (read by kit.launch). One is the Unsloth single-GPU path; more start
    `accelerate launch` with one of the kit's configs in kit/launch/ and load with transformers + PEFT."""

    num_processes: int = Field(1, gt=0)  # one per GPU; on a machine without GPUs, CPU processes (for tests)
    launcher: Literal["ddp", "zero2", "zero3", "fsdp"] = "ddp"  # see kit/launch/<launcher>.yaml for when to use it


class RunConfig(Section):
    recipe: str = "gsm8k"
    profile: Literal["auto", "smoke", "full"] = "auto"  # auto: smoke without a GPU, full with one
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


# The smoke profile: a few GRPO steps of the tiny model on the recipe's sample data. It proves the
# pipeline runs on any machine in about a minute; it does not train anything useful.
SMOKE_PROFILE: dict[str, Any] = {
    "model": {
        "name": TINY_MODEL,
        "max_seq_length": 512,
        "load_in_4bit": False,
        "fast_inference": False,
        "lora_rank": 8,
        "lora_alpha": 16,
    },
    "data": {"path": SAMPLE_DATA, "max_prompt_length": 384},
    "grpo": {
        "learning_rate": 1e-4,
        "per_device_train_batch_size": 4,  # 1 prompt x 4 generations per step
        "gradient_accumulation_steps": 1,
        "num_generations": 4,
        "max_completion_length": 32,
        "max_steps": 2,
        "optim": "adamw_torch",  # 8-bit Adam needs a GPU
    },
    "sft": {"max_steps": 4, "per_device_train_batch_size": 4, "optim": "adamw_torch", "logging_steps": 1},
    "eval": {"n": 16},
}


# The full profile without a GPU: what runs, and fastest, on a CPU (bench/cpu_step_split.py on SmolLM2-135M:
# 4-bit weights 1.19x slower per GRPO step; bfloat16 and gradient checkpointing within 1% of float32 without).
# Below the YAML file and the command line, so a setting given there wins.
CPU_FULL_PROFILE: dict[str, Any] = {
    "model": {"load_in_4bit": False, "fast_inference": False},  # vLLM needs a GPU
    "grpo": {"optim": "adamw_torch"},  # 8-bit Adam needs a GPU
    "sft": {"optim": "adamw_torch"},
}


def cross_field_problems(cfg: RunConfig) -> list[str]:
    """Rules that span fields, checked in one place before anything is loaded."""
    problems = []
    g, processes = cfg.grpo, cfg.launch.num_processes
    if cfg.completions_per_step % g.num_generations:
        problems.append(
            f"grpo: per_device_train_batch_size ({g.per_device_train_batch_size}) x gradient_accumulation_steps "
            f"({g.gradient_accumulation_steps}) x launch.num_processes ({processes}) = {cfg.completions_per_step} "
            f"completions per step, which is not a multiple of num_generations ({g.num_generations}); "
            f"{nearest_valid_batch(g, processes)}"
        )
    if g.max_completion_length >= cfg.model.max_seq_length:
        problems.append(
            f"grpo.max_completion_length ({g.max_completion_length}) leaves no room for the prompt in "
            f"model.max_seq_length ({cfg.model.max_seq_length}); raise max_seq_length or lower max_completion_length"
        )
    if g.max_steps == 0 or g.max_steps < -1:
        problems.append(f"grpo.max_steps ({g.max_steps}) must be a positive number of steps, or -1 to use num_train_epochs")
    if cfg.model.full_finetuning and cfg.model.load_in_4bit:
        problems.append("model.full_finetuning trains every weight, which 4-bit weights cannot hold; "
                        "set model.load_in_4bit=false (or train LoRA adapters)")
    if cfg.model.full_finetuning and cfg.model.fast_inference:
        # Unsloth sends full fine-tuning to FastModel, which raises NotImplementedError for vLLM
        problems.append("model.full_finetuning with model.fast_inference: Unsloth's vLLM generation serves LoRA "
                        "adapters only; set model.fast_inference=false (generation with transformers), or train LoRA")
    problems += multi_process_vllm_problems(cfg)
    if cfg.stages.count("sft") > 1 or cfg.stages.count("grpo") > 1:
        problems.append(f"stages: {cfg.stages} repeats a stage; each of sft and grpo runs at most once")
    if "gguf" in cfg.save.formats and "merged_16bit" not in cfg.save.formats:
        problems.append("save.formats: gguf is made from the merged 16-bit model; add merged_16bit")
    if cfg.launch.launcher == "fsdp" and cfg.grpo.optim.startswith(("adamw_8bit", "paged_adamw_8bit", "adamw_bnb_8bit")):
        problems.append(f"launch.launcher=fsdp with grpo.optim={cfg.grpo.optim}: bitsandbytes' 8-bit Adam does not "
                        "handle FSDP2's sharded weights; set grpo.optim=adamw_torch (or use launcher zero3)")
    if cfg.launch.launcher in SHARDED and cfg.model.load_in_4bit:
        problems.append(f"launch.launcher={cfg.launch.launcher} shards 16-bit weights across GPUs; the kit does not "
                        "shard 4-bit ones: set model.load_in_4bit=false, or use launcher ddp or zero2")
    if cfg.launch.launcher in SHARDED and cfg.model.full_finetuning:
        problems.append(f"model.full_finetuning with launch.launcher={cfg.launch.launcher}: the kit saves sharded "
                        "LoRA adapters only; train LoRA, or use launcher ddp or zero2 for full fine-tuning")
    for name, weight in cfg.rewards.items():
        if weight < 0:
            problems.append(f"rewards.{name}: weight {weight} is negative; use 0 to drop a reward")
    return problems


def multi_process_vllm_problems(cfg: RunConfig) -> list[str]:
    """4-bit weights with vLLM in several processes: TRL merges the LoRA into the packed 4-bit weights to send
    them to vLLM, which fails (TRL issues #3654 and #3466, PEFT #2501). One GPU shares them through Unsloth."""
    vllm = cfg.model.fast_inference or cfg.grpo.extra.get("use_vllm", False)
    if cfg.launch.num_processes == 1 or not (cfg.model.load_in_4bit and vllm):
        return []
    return [f"launch.num_processes={cfg.launch.num_processes} with model.load_in_4bit and vLLM generation: TRL "
            "cannot hand 4-bit weights merged with LoRA to vLLM (TRL #3654). Set model.load_in_4bit=false "
            "(16-bit weights, vLLM works in every process), or model.fast_inference=false (4-bit, generation "
            "with transformers, slower), or train on one GPU (Unsloth shares 4-bit weights with vLLM)"]


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


def deep_merge(base: dict, over: dict) -> dict:
    """Merge nested dicts, `over` winning; lists and scalars are replaced, not merged."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_overrides(items: list[str]) -> dict:
    """`grpo.learning_rate=1e-5 model.target_modules=[q_proj,v_proj]` -> a nested dict."""
    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise KitError(f"cannot read override '{item}': write it as section.key=value, e.g. grpo.max_steps=50")
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw) if raw else None
    return out


def read_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise KitError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise KitError(f"config file {path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise KitError(f"config file {path} must hold a mapping of settings, not {type(data).__name__}")
    data.pop("versions", None)  # a run.yaml records these two; they are not settings
    data.pop("memory", None)
    return data


def build_config(layers: list[dict]) -> RunConfig:
    """Merge the layers (lowest first) and validate once, reporting every problem together."""
    merged: dict = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as err:
        raise KitError(format_validation_error(err)) from None


def format_validation_error(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key{_did_you_mean(e['loc'])}")
        elif e["type"] == "value_error":
            lines.extend(f"  {msg}" for msg in e["msg"].removeprefix("Value error, ").splitlines())
        else:
            lines.append(f"  {key or '(top level)'}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join([f"the config has {len(lines)} problem(s):", *lines])


def _did_you_mean(loc: tuple) -> str:
    section: type[BaseModel] = RunConfig
    for part in loc[:-1]:
        field = section.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        section = annotation
    close = difflib.get_close_matches(str(loc[-1]), list(section.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f"; valid keys: {', '.join(section.model_fields)}"


def resolve_profile(requested: str, gpu: bool) -> str:
    if requested == "auto":
        return FULL if gpu else SMOKE
    return requested


def resolve_config(
    recipe_defaults: dict, file_layer: dict, cli_layer: dict, gpu: bool, recipe_has_sample: bool = True
) -> RunConfig:
    """Apply the layers in order: schema defaults < recipe < profile < YAML file < CLI.

    A recipe without sample data keeps its own data source under the smoke profile.
    """
    requested = deep_merge(file_layer, cli_layer).get("profile", "auto")
    if requested not in ("auto", SMOKE, FULL):
        raise KitError(f"profile: '{requested}' is not a profile; choose from: auto, smoke, full")
    profile = resolve_profile(requested, gpu)
    profile_layer = smoke_profile(recipe_has_sample) if profile == SMOKE else ({} if gpu else CPU_FULL_PROFILE)
    return build_config([recipe_defaults, profile_layer, file_layer, cli_layer, {"profile": profile}])


def smoke_profile(recipe_has_sample: bool) -> dict:
    layer = copy.deepcopy(SMOKE_PROFILE)
    if not recipe_has_sample:
        del layer["data"]["path"]
    return layer
