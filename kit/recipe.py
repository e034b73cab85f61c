"""The recipe contract: what a task module gives the kit (kit.recipes finds one by name, path or file).

A recipe is a plain module (`recipes/<name>.py`, any importable `pkg.module`, or a `.py` file). This is the
one list of what the kit reads from it; `recipe_from_module` checks each kind, and refuses a public name
one slip away from one of these (`DEFAULT`, `SYSTEM_PROMT`, `Eval`) rather than ignore it.

Required:
    prepare(split: str, source: str | None) -> datasets.Dataset
        rows with a chat-format `prompt` column (a list of {"role", "content"} messages) and the columns
        its rewards read (e.g. `answer`); `source` is None for the recipe's hub dataset, or a local file.
        Used by kit.data for training and held-out rows (train, eval, the smoke profile).
    REWARDS: kit.rewards.RewardBundle
        reward functions with TRL's signature, each with its weight: RewardBundle((fn, 2.0), ...).
        Used by training (weights changed by the config's `rewards:`), `kit eval` and `kit rewards check`.

Optional (each ends with what the kit does without it):
    DEFAULTS: dict
        settings that differ from the kit's, same shape as the YAML config; they sit above the kit's
        defaults and below the profile, the config file and the CLI. Absent: {}.
    write_sample(path: Path, split: str) -> None
        writes a small data file in the format `prepare` reads, for `data.path: sample` (the smoke
        profile, the tests, offline runs). Absent: `data.path: sample` is refused.
    SAMPLE_COMPLETIONS: list[dict]
        a few good and bad completions with their dataset columns, [{"label": ..., "completion": ...,
        "answer": ...}], for `kit rewards check RECIPE`. Absent: that command needs --completions FILE.
    EVAL: Scoring
        Scoring(strict=..., lenient=..., formatted=...): what counts as right for `kit eval` and a run's
        before/after held-out scores, each said with reward functions that must give full marks, e.g.
        strict=(answer_correct, FORMAT) (kit/rewards/scoring.py).
        Absent: `default_scoring`, the top-weighted reward >= 0.5 is right; format is not reported.
    SYSTEM_PROMPT: str
        the system message `kit chat --recipe NAME` starts with (training prompts get theirs from
        `prepare`, or from data.system_prompt). Absent: no system message in chat.
    sft_target(row: dict) -> str | list[dict]
        the worked answer for a row, for the SFT warm start (stages: [sft, grpo]): the reply's text, or
        with tools the completion's messages (assistant turns with tool_calls, tool results, the answer).
        Absent: a config with an sft stage is refused.
    NAME: str
        the recipe's name in output folders and messages. Absent: the module's name.
    TOOLS: list of functions
        tools the model may call over several turns, each with type hints and a Google-style docstring
        (`Args:` per argument), as TRL's GRPOTrainer(tools=...) takes them; e.g. [kit.tools.python_tool()].
        Prompts are then shown the tools, the model's calls run and their results join the completion,
        which rewards get as a list of messages. Absent: one reply per prompt.
    PICTURES: bool
        True when the rows show the model pictures (an `image` or `images` column of PIL images, e.g.
        recipes/count_shapes.py): the smoke profile then trains the kit's tiny vision-language model
        (kit:tiny-vision), and a text model is refused before loading. Absent: False.
    PICTURE_SIZE: tuple[int, int]
        (width, height) in pixels of the largest picture a row shows, for the memory plan's image tokens
        (`kit plan`, and `kit train` before loading). Absent: the plan counts the vision tower but not the
        pictures' tokens, and says so (`kit plan --image-size WxH` gives it there).
    ENVIRONMENT: class
        instead of TOOLS, a class built once per rollout: `reset(**row)` before it (its returned text is
        appended to the prompt), public methods as the tools, optionally `get_reward() -> float`, which
        TRL adds as a reward named after the class (weight 1). Rewards get the instances as `environments`.
        Absent: no environment.
    FACT_COLUMNS: tuple of column names
        the columns holding a row's facts (its numbers and names; a chat `prompt`: its user turns), which a
        completion that works the task out should mention, e.g. ("prompt",) for a word problem. While GRPO
        trains, the kit warns when the completions it reinforces stop mentioning them (kit/monitor/gaming.py).
        Absent: that check is off (right for tasks answered without working, such as a sum).
    HUB_ID: str
        the hub dataset `prepare` reads when `source` is None, e.g. "openai/gsm8k"; `kit recipes` lists it.
        Absent: `kit recipes` shows DATA.
    DATA: str
        where the rows come from without a hub dataset, in a few words ("generated: 400 pairs", "your
        file (a sample ships)"), for `kit recipes`. Absent: "made by the recipe".
    JUDGE_CALIBRATION: list[dict]
        for a recipe with an llm_judge: cases to test the judge on before it pays, each a request with a good
        and a plainly wrong reply, [{"prompt": ..., "good": ..., "wrong": ..., <the rubric's dataset columns>,
        "self_praising": [optional wrong replies that flatter themselves or the grader]}]. Before training and
        in `kit rewards check`, the judge must score each good reply above its wrong one and pay no wrong
        reply that praises itself (kit/checks/judge_calibration.py; judge.calibration: stop, warn or off).
        Absent: the judge is not calibrated, and the kit says so.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kit.config import RunConfig, resolve_config
from kit.errors import KitError
from kit.rewards.bundle import RewardBundle
from kit.rewards.scoring import Passes, Scoring
from kit.tools.toolbox import Toolbox

USER_MODULE_PREFIX = "kit_user_recipe_"  # a recipe file's module name in sys.modules (kit.recipes)


def default_scoring(rewards: RewardBundle) -> Scoring:
    """Without an EVAL: a completion is right when the top-weighted reward gives it 0.5 or more (never a penalty:
    a reward with a negative weight counts against a completion)."""
    main = max(rewards.rewards, key=lambda r: r.weight)
    if main.weight <= 0:
        raise KitError("no reward with a positive weight to judge by; give the recipe an EVAL = Scoring(...) that "
                       "says what counts as right (kit/rewards/scoring.py)")
    return Scoring(strict=Passes(main.fn, 0.5), lenient=Passes(main.fn, 0.5))


@dataclass
class Recipe:
    name: str
    prepare: Callable[[str, str | None], Any]
    rewards: RewardBundle
    defaults: dict = field(default_factory=dict)
    write_sample: Callable[[Path, str], None] | None = None
    sample_completions: list[dict] = field(default_factory=list)
    judge_calibration: list[dict] = field(default_factory=list)
    scoring: Scoring | None = None
    system_prompt: str | None = None
    sft_target: Callable[[dict], str | list] | None = None
    toolbox: Toolbox = field(default_factory=Toolbox)
    pictures: bool = False
    picture_size: tuple[int, int] | None = None
    fact_columns: tuple[str, ...] = ()
    data: str = "made by the recipe"  # where the rows come from: "hub <id>", or the recipe's DATA

    def config(self, file_layer: dict, overrides: dict, gpu: bool) -> RunConfig:
        """A run's settings with this recipe: its defaults < profile < a config file < flags and overrides."""
        return resolve_config(self.defaults, file_layer, overrides, gpu=gpu,
                              recipe_has_sample=self.write_sample is not None, recipe_has_tools=bool(self.toolbox),
                              recipe_shows_pictures=self.pictures)


def _fits_samples(value) -> bool:
    return isinstance(value, list) and all(isinstance(s, dict) and "completion" in s for s in value)


def _fits_calibration(value) -> bool:
    """JUDGE_CALIBRATION: cases with a good and a wrong reply, and optionally more self-praising wrong ones."""
    def fits(case) -> bool:
        praising = case.get("self_praising", []) if isinstance(case, dict) else None
        return (isinstance(case, dict) and isinstance(case.get("good"), str) and isinstance(case.get("wrong"), str)
                and isinstance(praising, list) and all(isinstance(s, str) for s in praising))

    return isinstance(value, list) and bool(value) and all(fits(case) for case in value)


REQUIRED = ("prepare", "REWARDS")
# Each attribute the kit reads: does a value fit, and what to write instead (the module docstring says more).
ATTRIBUTES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "prepare": (callable, "a function prepare(split, source) -> datasets.Dataset"),
    "REWARDS": (lambda v: isinstance(v, RewardBundle), "a RewardBundle((fn, weight), ...) from kit.rewards"),
    "DEFAULTS": (lambda v: isinstance(v, dict),
                 'a dict shaped like the YAML config, e.g. {"grpo": {"max_steps": 100}}'),
    "write_sample": (callable, "a function write_sample(path, split)"),
    "SAMPLE_COMPLETIONS": (_fits_samples, 'a list of dicts, each {"completion": ..., <dataset columns>}'),
    "EVAL": (lambda v: isinstance(v, Scoring), "a kit.recipe.Scoring(strict=..., lenient=..., formatted=...)"),
    "SYSTEM_PROMPT": (lambda v: isinstance(v, str), "a string"),
    "sft_target": (callable, "a function sft_target(row) -> str"),
    "NAME": (lambda v: isinstance(v, str), "a string"),
    "TOOLS": (lambda v: isinstance(v, (list, tuple)) and all(callable(t) for t in v), "a list of functions"),
    "ENVIRONMENT": (lambda v: isinstance(v, type), "a class with reset(**row) and tool methods"),
    "PICTURES": (lambda v: isinstance(v, bool), "True or False"),
    "PICTURE_SIZE": (lambda v: isinstance(v, tuple) and len(v) == 2 and all(isinstance(n, int) and n > 0 for n in v),
                     "(width, height) in pixels, e.g. (640, 480)"),
    "FACT_COLUMNS": (lambda v: isinstance(v, tuple) and all(isinstance(c, str) for c in v),
                     'a tuple of column names, e.g. ("prompt",)'),
    "HUB_ID": (lambda v: isinstance(v, str) and "/" in v, 'a hub dataset id, e.g. "openai/gsm8k"'),
    "DATA": (lambda v: isinstance(v, str), 'a few words, e.g. "your file (a sample ships)"'),
    "JUDGE_CALIBRATION": (_fits_calibration, 'a list of dicts, each {"prompt": ..., "good": ..., "wrong": ..., '
                          '<the rubric\'s dataset columns>}, optionally "self_praising": [...]'),
}
KNOWN = (f"a recipe defines {' and '.join(REQUIRED)}, and may define "
         f"{', '.join(a for a in ATTRIBUTES if a not in REQUIRED)}; kit/recipe.py says what each is")


def recipe_from_module(module: ModuleType, spec: str, check_tools: bool = True) -> Recipe:
    """check_tools=False: the caller checks recipe.toolbox itself, later (the check imports transformers, which
    `kit train` must not do before Unsloth's import)."""
    _refuse_misspelled(module, spec)
    missing = [attr for attr in REQUIRED if not hasattr(module, attr)]
    if missing:
        raise KitError(
            f"recipe '{spec}' lacks {' and '.join(missing)}: a recipe module defines "
            "prepare(split, source) and REWARDS = RewardBundle(...) (see recipes/gsm8k.py)"
        )
    _refuse_wrong_kinds(module, spec)
    name = getattr(module, "NAME", module.__name__.rsplit(".", 1)[-1].removeprefix(USER_MODULE_PREFIX))
    if hasattr(module, "TOOLS") and hasattr(module, "ENVIRONMENT"):
        raise KitError(f"recipe '{spec}' defines both TOOLS and ENVIRONMENT: give one (an environment's tools are "
                       "its methods)")
    toolbox = Toolbox(tuple(getattr(module, "TOOLS", ())), getattr(module, "ENVIRONMENT", None), spec)
    if check_tools:
        toolbox.check()
    return Recipe(
        name=name,
        prepare=module.prepare,
        rewards=module.REWARDS,
        defaults=getattr(module, "DEFAULTS", {}),
        write_sample=getattr(module, "write_sample", None),
        sample_completions=getattr(module, "SAMPLE_COMPLETIONS", []),
        judge_calibration=getattr(module, "JUDGE_CALIBRATION", []),
        scoring=getattr(module, "EVAL", None),
        system_prompt=getattr(module, "SYSTEM_PROMPT", None),
        sft_target=getattr(module, "sft_target", None),
        toolbox=toolbox,
        pictures=getattr(module, "PICTURES", False),
        picture_size=getattr(module, "PICTURE_SIZE", None),
        fact_columns=getattr(module, "FACT_COLUMNS", ()),
        data=f"hub {module.HUB_ID}" if hasattr(module, "HUB_ID") else getattr(module, "DATA", Recipe.data),
    )


def _refuse_misspelled(module: ModuleType, spec: str) -> None:
    """A typo the kit would otherwise skip in silence (`DEFAULT = {...}` trains with none of those settings).

    A public name counts as a typo when its spelling is close to an attribute the kit reads (any case), that
    attribute is absent, and the value is of its kind: so `prepare_rows`, `HUB_SPLIT` or a list called NAMES,
    a recipe's own helpers, pass."""
    defined = {name for name in vars(module) if not name.startswith("_")}
    by_lower = {attr.lower(): attr for attr in ATTRIBUTES}
    problems = []
    for name in sorted(defined - ATTRIBUTES.keys()):
        close = difflib.get_close_matches(name.lower(), by_lower, n=1, cutoff=0.85)
        meant = by_lower[close[0]] if close else None
        if meant and meant not in defined and ATTRIBUTES[meant][0](getattr(module, name)):
            problems.append(f"{name} is not something the kit reads; did you mean {meant}?")
    if problems:
        raise KitError(f"recipe '{spec}': {' '.join(problems)} ({KNOWN})")


def _refuse_wrong_kinds(module: ModuleType, spec: str) -> None:
    problems = [f"{attr} must be {shape}, not {type(getattr(module, attr)).__name__}"
                for attr, (fits, shape) in ATTRIBUTES.items()
                if hasattr(module, attr) and not fits(getattr(module, attr))]
    if problems:
        raise KitError(f"recipe '{spec}': {'; '.join(problems)}")
