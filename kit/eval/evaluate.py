"""Before/after numbers: generate on held-out prompts and score them the recipe's way.

    python -m kit eval gsm8k --model outputs/run/merged
    python -m kit eval gsm8k --model BASE --adapter outputs/run/adapter   # base and base+adapter side by side

Per model: strict accuracy (right answer in the required format), lenient accuracy (the right answer
stated anywhere), format compliance, the mean of each reward function, and mean completion length in
tokens. Each proportion carries its 95% Wilson interval, and each later column's gain over the first a paired
test (kit/eval/intervals.py): the per-prompt outcomes it needs are kept in the result, by each prompt's key.
A recipe says what strict / lenient / formatted mean with an EVAL = kit.recipe.Scoring(...), in
terms of its reward functions (kit/rewards/scoring.py); without one, its highest-weighted reward scoring
>= 0.5 counts as right and format is not reported.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean

from kit.data.row_pictures import image_column, row_images
from kit.digest import shown_keys
from kit.eval.intervals import Gain, paired_gain, wilson
from kit.models.generate import Sampling, generate
from kit.models.vision_generate import generate_with_images
from kit.models.vision_models import text_tokenizer
from kit.recipe import Recipe, default_scoring
from kit.rewards.guard import CheckedReward
from kit.rewards.trl_call import trl_kwargs
from kit.tools.reply_guard import safe_text
from kit.tools.stats import tool_stats, transcript_text


@dataclass
class EvalResult:
    name: str
    n: int
    strict_accuracy: float
    lenient_accuracy: float
    format_compliance: float | None
    rewards: dict[str, float]
    mean_length: float
    samples: list[dict] = field(default_factory=list)
    tools: dict[str, float] | None = None  # with a recipe's tools: kit.tools.stats.tool_stats of the transcripts
    trained_on: int = 0  # of the n prompts, how many the model was trained on (where the kit can tell)
    # each prompt's outcome, to pair with another scoring of the same prompts: {"keys": [kit.digest.shown_keys],
    # "strict": [bool], "lenient": [bool], "format": [bool] or None}; None in eval.json files written before them
    outcomes: dict | None = None

    @classmethod
    def from_json(cls, record: dict) -> EvalResult:
        """A result as write_json wrote it, less what it worked out from the rest (the intervals)."""
        return cls(**{k: v for k, v in record.items() if k in cls.__dataclass_fields__})


def evaluate(model, tokenizer, recipe: Recipe, rows, sampling: Sampling, name: str, lora_request=None,
             batch_size: int = 32) -> EvalResult:
    """Generate for the held-out prompts and score them; with tools, whole multi-turn rollouts (kit.eval.rollout)."""
    if recipe.toolbox:
        from kit.eval.rollout import roll_out
        from kit.tools.template import use_tool_template

        if note := use_tool_template(tokenizer, getattr(tokenizer, "name_or_path", "the model")):
            print(note)  # a base model scored with a run's adapter: its stock template, which cannot show tools
        rollouts = roll_out(model, tokenizer, rows.to_list(), recipe.toolbox, sampling, sampling.max_tool_rounds,
                            batch_size, lora_request)
        return score_completions(recipe, rows, [r.messages for r in rollouts], tokenizer, name,
                                 [r.environment for r in rollouts])
    if column := image_column(rows):
        images = [row_images(value) for value in rows[column]]
        texts = generate_with_images(model, tokenizer, list(rows["prompt"]), images, sampling, batch_size)
    else:
        texts = generate(model, tokenizer, list(rows["prompt"]), sampling, batch_size=batch_size,
                         lora_request=lora_request)
    return score(recipe, rows, texts, tokenizer, name)


def score(recipe: Recipe, rows, texts: list[str], tokenizer, name: str) -> EvalResult:
    """Single replies, scored: each is the completion [{"role": "assistant", "content": text}], as TRL hands it."""
    return score_completions(recipe, rows, [[{"role": "assistant", "content": t}] for t in texts], tokenizer, name)


def score_completions(recipe: Recipe, rows, completions: list[list[dict]], tokenizer, name: str,
                      environments: list | None = None) -> EvalResult:
    """Each reward's mean over the completions, and the recipe's verdicts, from one call of each reward.

    An environment's get_reward() is reported beside the recipe's rewards, under the name TRL logs it by."""
    scoring = recipe.scoring or default_scoring(recipe.rewards)
    records = rows.to_list()
    texts = [assistant_text(c) for c in completions]
    played = environments if environments and environments[0] is not None else None
    columns = reward_kwargs(records, texts, tokenizer, played)
    ids = columns["completion_ids"]
    computed = {r.fn: CheckedReward(r.fn).call(completions, columns, where=" in evaluation")
                for r in recipe.rewards.rewards}
    verdicts = scoring.judge(completions, columns, computed)
    rewards = {r.name: _finite_mean(computed[r.fn]) for r in recipe.rewards.rewards}
    if recipe.toolbox.rewarded_by_environment:
        rewards[recipe.toolbox.reward_name] = _finite_mean([e.get_reward() for e in environments])
    shown = [transcript_text(c) for c in completions] if recipe.toolbox else texts
    return EvalResult(
        name=name,
        n=len(completions),
        strict_accuracy=mean(verdicts.strict),
        lenient_accuracy=mean(verdicts.lenient),
        format_compliance=None if verdicts.formatted is None else mean(verdicts.formatted),
        rewards=rewards,
        mean_length=mean(len(i) for i in ids),
        samples=[{"prompt": r["prompt"][-1]["content"], "completion": t} for r, t in list(zip(records, shown))[:5]],
        tools=tool_stats(completions) if recipe.toolbox else None,
        outcomes={"keys": shown_keys(rows), "strict": list(map(bool, verdicts.strict)),
                  "lenient": list(map(bool, verdicts.lenient)),
                  "format": None if verdicts.formatted is None else list(map(bool, verdicts.formatted))},
    )


def reward_kwargs(records: list[dict], texts: list[str], tokenizer, environments: list | None = None) -> dict:
    """The keywords a reward gets for these rows' completions, as TRL passes them (kit.rewards.trl_call): `prompts`,
    each dataset column, and `completion_ids` for rewards that count tokens (a lone surrogate counted as its
    escape: the tokenizer refuses it as written)."""
    ids = [text_tokenizer(tokenizer)(safe_text(t), add_special_tokens=False).input_ids for t in texts]
    names = [c for c in (records[0] if records else {}) if c != "prompt"]
    return trl_kwargs([r["prompt"] for r in records], {c: [r.get(c) for r in records] for c in names},
                      completion_ids=ids, environments=environments)


def assistant_text(completion: list[dict]) -> str:
    """What the model wrote in a completion (its calls as their text): the tool results are not its tokens."""
    parts = []
    for m in completion:
        if m.get("role") == "tool":
            continue
        parts += [json.dumps(c.get("function", c)) for c in m.get("tool_calls") or []]
        parts.append(str(m.get("content") or ""))
    return "".join(parts)


def _finite_mean(values: list) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return mean(finite) if finite else float("nan")


PROPORTIONS = [("strict accuracy", "strict_accuracy", "strict"), ("lenient accuracy", "lenient_accuracy", "lenient"),
               ("format compliance", "format_compliance", "format")]  # (row, EvalResult field, outcomes key)


def format_table(results: list[EvalResult]) -> str:
    """The scores side by side, each proportion with its 95% interval on the row below it, then each later
    column's gains over the first, tested on the prompts both scored."""
    width = max(12, *(len(r.name) for r in results))
    rows = []
    for title, attribute, _ in PROPORTIONS:
        rows += [(title, lambda r, a=attribute: _pct(getattr(r, a))),
                 ("  95% interval", lambda r, a=attribute: interval_text(r.n, getattr(r, a)))]
    rows.append(("mean length (tokens)", lambda r: f"{r.mean_length:.1f}"))
    for name in results[0].rewards:
        rows.append((f"reward {name}", lambda r, n=name: f"{r.rewards.get(n, float('nan')):.3f}"))
    if results[0].tools is not None:
        rows += [(title, lambda r, k=key, f=shape: "-" if r.tools is None else f(r.tools[k]))
                 for title, key, shape in TOOL_ROWS]
    label = max(len(row[0]) for row in rows)
    lines = [trained_on_warning(results[0])] if results[0].trained_on else []
    lines += [f"{'n = ' + str(results[0].n):{label}}  " + "  ".join(f"{r.name:>{width}}" for r in results)]
    lines += [f"{title:{label}}  " + "  ".join(f"{get(r):>{width}}" for r in results) for title, get in rows]
    return "\n".join(lines + [gain_line(results[0], later, proportion) for later in results[1:]
                              for proportion in PROPORTIONS if getattr(later, proportion[1]) is not None
                              and getattr(results[0], proportion[1]) is not None])


def interval_text(n: int, value: float | None) -> str:
    """A proportion's 95% Wilson interval in points, e.g. "[36, 55]"; "-" where there is no proportion."""
    if value is None or n <= 0:
        return "-"
    low, high = wilson(round(value * n), n)
    return f"[{100 * low:.0f}, {100 * high:.0f}]"


def gain_line(earlier: EvalResult, later: EvalResult, proportion: tuple[str, str, str]) -> str:
    """One gain in words: the paired test where both results kept their per-prompt outcomes."""
    title, attribute, key = proportion
    head = f"{title}, {later.name} vs {earlier.name}: "
    gain = paired(earlier, later, key)
    if gain is None:
        change = 100 * (getattr(later, attribute) - getattr(earlier, attribute))
        return head + f"{change:+.1f} points (untested: no per-prompt outcomes of the same prompts to pair)"
    return head + gain.words()


def paired(earlier: EvalResult, later: EvalResult, key: str) -> Gain | None:
    """The gain on the prompts both results scored, matched by prompt key (the k-th copy of a repeated prompt
    with the k-th); None where either result lacks the outcomes, or they share no prompt."""
    sides = [outcomes_by_prompt(r, key) for r in (earlier, later)]
    if None in sides:
        return None
    shared = [k for k in sides[0] if k in sides[1]]
    return paired_gain([sides[0][k] for k in shared], [sides[1][k] for k in shared]) if shared else None


def outcomes_by_prompt(result: EvalResult, key: str) -> dict[tuple[str, int], bool] | None:
    outcomes = result.outcomes or {}
    if outcomes.get(key) is None or len(outcomes[key]) != len(outcomes.get("keys") or []):
        return None
    seen: dict[str, int] = {}
    by_prompt = {}
    for prompt, outcome in zip(outcomes["keys"], outcomes[key]):
        seen[prompt] = seen.get(prompt, -1) + 1
        by_prompt[(prompt, seen[prompt])] = bool(outcome)
    return by_prompt


def trained_on_warning(result: EvalResult) -> str:
    return (f"WARNING: {result.trained_on} of these {result.n} prompts were TRAINED ON: these scores are not "
            "held-out scores")


TOOL_ROWS = [("replies calling a tool", "calling", lambda v: _pct(v)),
             ("tool calls per reply", "calls", lambda v: f"{v:.2f}"),
             ("tool calls unparsed", "unparsed", lambda v: _pct(v)),
             ("tool results errors", "tool_errors", lambda v: _pct(v)),
             ("assistant turns", "turns", lambda v: f"{v:.2f}")]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def write_json(path: Path, results: list[EvalResult], **extra) -> None:
    """The results, each proportion's 95% Wilson interval beside it ("intervals": {field: [low, high]}), and each
    later result's gains over the first ("gains"), as the table shows them."""
    records = [{**asdict(r), "intervals": intervals(r)} for r in results]
    gains = [gain_record(results[0], later, proportion) for later in results[1:] for proportion in PROPORTIONS]
    path.write_text(json.dumps({**extra, "results": records, "gains": [g for g in gains if g]}, indent=2) + "\n")


def intervals(result: EvalResult) -> dict[str, list[float] | None]:
    return {attribute: None if getattr(result, attribute) is None or result.n <= 0 else
            [round(x, 4) for x in wilson(round(getattr(result, attribute) * result.n), result.n)]
            for _, attribute, _ in PROPORTIONS}


def gain_record(earlier: EvalResult, later: EvalResult, proportion: tuple[str, str, str]) -> dict | None:
    gain = paired(earlier, later, proportion[2])
    if gain is None:
        return None
    return {"proportion": proportion[1], "earlier": earlier.name, "later": later.name, "n": gain.n,
            "difference": round(gain.difference, 4), "interval": [round(gain.low, 4), round(gain.high, 4)],
            "improved": gain.improved, "worsened": gain.worsened, "mcnemar_p": gain.p, "noise": gain.noise,
            "words": gain.words()}


def compare(recipe: Recipe, rows, loaded, sampling: Sampling, names: tuple[str, str] = ("base", "trained"),
            batch_size: int = 32) -> list[EvalResult]:
    """With an adapter: the base (adapter off) and base + adapter, side by side; else the model alone."""
    results = []
    if loaded.adapter:
        with loaded.baseline():
            results.append(evaluate(loaded.model, loaded.tokenizer, recipe, rows, sampling, names[0],
                                    batch_size=batch_size))
    results.append(evaluate(loaded.model, loaded.tokenizer, recipe, rows, sampling,
                            names[1] if loaded.adapter else "model", lora_request=loaded.lora_request,
                            batch_size=batch_size))
    return results
