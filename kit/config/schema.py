"""The schema: RunConfig, which holds one section per part of a run (kit.config.sections) and checks the rules
that span fields (kit.config.rules) whenever it is built or changed. `choices` reads a field's allowed values,
so the CLI offers the same ones the schema accepts.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, Field, PositiveInt, field_validator, model_validator

from kit.config.judging import JudgeConfig
from kit.config.rules import cross_field_problems
from kit.config.sections import (
    DataConfig,
    EvalConfig,
    GRPOSection,
    LaunchConfig,
    ModelConfig,
    MonitorConfig,
    Profile,
    SaveConfig,
    Section,
    SFTSection,
)
from kit.config.stages import KINDS as STAGE_KINDS
from kit.errors import KitError


class RunConfig(Section):
    """The run as a whole: its recipe, profile, folder, stages and reward weights (read by kit.train.prepare
    and kit.train.run), and one section per part of the run."""

    recipe: str = Field("gsm8k", description="recipe name, dotted module path, or .py file")
    profile: Profile = Field("auto", description="auto: smoke without a GPU, full with one; smoke: tiny model + "
                             "sample data")
    output_dir: str | None = Field(None, description="the run's folder; null: `outputs/<recipe>-<timestamp>`")
    seed: int = Field(3407, description="one seed for loading, training and evaluation")
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    sft: SFTSection = Field(default_factory=SFTSection)
    stages: list[Literal["sft", "grpo"] | dict[Literal["sft", "grpo"], dict[str, Any] | None]] = Field(
        default_factory=lambda: ["grpo"], min_length=1,
        description="the training stages, in order, e.g. `[sft, grpo]`; an entry may carry its own settings, "
        "`{grpo: {rewards: {answer_correct: 0}, max_steps: 50}}` (docs/settings.md, Multi-stage training)")
    eval: EvalConfig = Field(default_factory=EvalConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)
    save: SaveConfig = Field(default_factory=SaveConfig)
    launch: LaunchConfig = Field(default_factory=LaunchConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    rewards: dict[str, float] = Field(default_factory=dict, description="a reward's weight by name, e.g. "
                                      "`{xml_count: 0.25}`; 0 drops it")
    reward_models: dict[str, str] = Field(default_factory=dict, description="a reward model reward's model by "
                                          "the reward's name (a hub id or a folder), over the recipe's, e.g. "
                                          "`{preference: kit:tiny-reward}`")
    adaptive_rewards: list[str] = Field(default_factory=list, description="rewards whose weights follow the running "
                                        "success rate")
    code_isolation: Literal["auto", "bubblewrap", "namespaces", "unisolated"] = Field(
        "auto", description="where code rewards run model-written code (kit/sandbox): auto takes bubblewrap, else "
        "the kit's own namespaces (root); unisolated (no namespaces: docs/rewards.md, The code sandbox) must be "
        "asked for by name")
    cpu_threads: Literal["auto"] | PositiveInt = Field(
        "auto", description="torch's threads without a GPU: auto uses the cores other programs leave free, "
        "counted at the start and again when a step slows (kit/cpu_threads.py); a number such as 2 fixes the count")

    @property
    def completions_per_step(self) -> int:
        """TRL's generation_batch_size: every process's batch, over its accumulation steps."""
        g = self.grpo
        return g.per_device_train_batch_size * g.gradient_accumulation_steps * self.launch.total_processes

    @field_validator("stages", mode="before")
    @classmethod
    def _known_kinds(cls, stages: Any) -> Any:
        """One sentence for an unknown kind, rather than pydantic's two (one per shape an entry may take)."""
        for entry in stages if isinstance(stages, list) else []:
            for kind in [entry] if isinstance(entry, str) else list(entry) if isinstance(entry, dict) else []:
                if kind not in STAGE_KINDS:
                    raise ValueError(f"stages: unknown stage {kind!r}; a stage is {' or '.join(STAGE_KINDS)}")
        return stages

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
    values = literal_values(section.model_fields[field].annotation)
    if not values:
        raise KitError(f"{section.__name__}.{field} is not a Literal field, so it has no fixed choices")
    return values


def literal_values(annotation: Any) -> tuple[str, ...]:
    """The values of the Literal in a type (list[Literal[...]]: its items'); () for a type without one."""
    while get_origin(annotation) is not Literal:
        inner = get_args(annotation)  # list[X] -> (X,); anything without a Literal inside ends with ()
        if not inner:
            return ()
        annotation = inner[0]
    return get_args(annotation)


PROFILES = choices(RunConfig, "profile")
LAUNCHERS = choices(LaunchConfig, "launcher")
SAVE_FORMATS = choices(SaveConfig, "formats")
