"""The training stages a run lists, each with its own settings: the guide's curriculum as configuration.

    stages: [sft, grpo]                                           # a warm start, then GRPO
    stages:                                                       # the guide's format first, then correctness
      - sft
      - grpo: {name: format, rewards: {correctness_reward: 0}, max_steps: 50}
      - grpo: {name: correctness, learning_rate: 2.0e-6}

An entry is a stage's kind, or a mapping of its kind to what differs in that stage: `name` (for its metrics,
held-out column and checkpoint folder), `rewards` (GRPO: weights by name over the run's `rewards`; 0 drops one for
this stage) and any setting of the stage's own section (`grpo` or `sft`), except those that change the memory
plan, which is made once for the run from the sections themselves.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit.config.schema import RunConfig

KINDS = ("sft", "grpo")
# What the memory plan reads (kit.plan): one value for the whole run.
PLANNED = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations", "max_completion_length",
           "optim")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")  # a folder name too (OUT/checkpoints/<name>)


@dataclass(frozen=True)
class StagePlan:
    """One stage as it runs: its kind, its name, the run's settings with its own, its reward weights."""

    kind: str
    name: str
    cfg: RunConfig  # the run's settings, the stage's own in its section
    rewards: dict[str, float] = field(default_factory=dict)  # over the run's `rewards`
    only_grpo: bool = True  # the run's one GRPO stage: its checkpoints keep the plain OUT/checkpoints

    @property
    def checkpoint_folder(self) -> str | None:
        """The stage's folder under OUT/checkpoints; None for a run's one GRPO stage (OUT/checkpoints itself)."""
        return None if self.only_grpo else self.name


def entry_kind_and_settings(entry) -> tuple[str, dict[str, Any]]:
    if isinstance(entry, str):
        return entry, {}
    (kind, settings), = entry.items()
    return kind, dict(settings or {})


def stage_problems(cfg: RunConfig) -> list[str]:
    """Each entry that cannot run, as a sentence naming it and the fix."""
    from kit.config.sections import GRPOSection, SFTSection

    sections = {"sft": SFTSection, "grpo": GRPOSection}
    problems = []
    for index, entry in enumerate(cfg.stages):
        where = f"stages[{index}]"
        if isinstance(entry, dict) and len(entry) != 1:
            problems.append(f"{where}: a stage mapping has one key, its kind (sft or grpo), e.g. "
                            "{grpo: {max_steps: 50}}; got " + ", ".join(map(str, entry)))
            continue
        kind, settings = entry_kind_and_settings(entry)
        if not isinstance(settings, dict):
            problems.append(f"{where}: {kind}'s settings must be a mapping, e.g. {{{kind}: {{max_steps: 50}}}}")
            continue
        name = settings.get("name")
        if name is not None and not (isinstance(name, str) and NAME.match(name)):
            problems.append(f"{where}: name {name!r} must be letters, digits, '-', '_' or '.' (it names a folder)")
        if "rewards" in settings and kind != "grpo":
            problems.append(f"{where}: rewards weigh GRPO's rewards; an {kind} stage has none")
        own = {k: v for k, v in settings.items() if k not in ("name", "rewards")}
        unknown = [k for k in own if k not in sections[kind].model_fields]
        planned = [k for k in own if k in PLANNED and kind == "grpo"]
        for key in unknown:
            close = difflib.get_close_matches(key, [*sections[kind].model_fields, "name", "rewards"], n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            problems.append(f"{where}: {key} is not a {kind} setting; {hint}(kit train --help lists them)")
        if planned:
            problems.append(f"{where}: {', '.join(planned)} sets the memory plan, which is made once for the run; "
                            f"set it in the grpo section for every stage")
        if not unknown and not planned:
            problems += [f"{where}: {p}" for p in section_problems(sections[kind], getattr(cfg, kind), own)]
    plans = [] if problems else stage_plans(cfg)
    repeated = sorted({p.name for p in plans if [q.name for q in plans].count(p.name) > 1})
    if repeated:
        problems.append(f"stages: the name {', '.join(repeated)} is used twice; give each stage its own name")
    return problems


def section_problems(section_type, section, own: dict) -> list[str]:
    """The stage's section as it will run: each field valid (kit.config.rules checks the rules across fields)."""
    from pydantic import ValidationError

    try:
        section_type.model_validate({**section.model_dump(), **own})
    except ValidationError as err:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()]
    return []


def stage_plans(cfg: RunConfig) -> list[StagePlan]:
    """The stages in order, each named: its own name, else its kind, numbered when the kind repeats (grpo-1)."""
    kinds = [entry_kind_and_settings(e)[0] for e in cfg.stages]
    seen: dict[str, int] = {}
    plans = []
    for entry in cfg.stages:
        kind, settings = entry_kind_and_settings(entry)
        seen[kind] = seen.get(kind, 0) + 1
        name = settings.pop("name", None) or (kind if kinds.count(kind) == 1 else f"{kind}-{seen[kind]}")
        rewards = settings.pop("rewards", None) or {}
        section = getattr(cfg, kind).model_validate({**getattr(cfg, kind).model_dump(), **settings})
        plans.append(StagePlan(kind, name, cfg.model_copy(update={kind: section}), rewards,
                               only_grpo=kinds.count("grpo") == 1))
    return plans
