"""Before/after numbers: generate on held-out prompts and score them the recipe's way.

    python -m kit eval gsm8k --model outputs/run/merged
    python -m kit eval gsm8k --model BASE --adapter outputs/run/adapter   # base and base+adapter side by side

Per model: strict accuracy (right answer in the required format), lenient accuracy (the right answer
stated anywhere), format compliance, the mean of each reward function, and mean completion length in
tokens. A recipe says what strict / lenient / formatted mean with an EVAL = kit.recipe.Scoring(...), in
terms of its reward functions (kit/rewards/scoring.py); without one, its highest-weighted reward scoring
>= 0.5 counts as right and format is not reported.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean

from kit.eval.generate import Sampling, generate
from kit.recipe import Recipe, default_scoring
from kit.rewards.guard import CheckedReward


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


def evaluate(model, tokenizer, recipe: Recipe, rows, sampling: Sampling, name: str, lora_request=None,
             batch_size: int = 32) -> EvalResult:
    prompts = list(rows["prompt"])
    texts = generate(model, tokenizer, prompts, sampling, batch_size=batch_size, lora_request=lora_request)
    return score(recipe, rows, texts, tokenizer, name)


def score(recipe: Recipe, rows, texts: list[str], tokenizer, name: str) -> EvalResult:
    """Each reward's mean over the completions, and the recipe's verdicts, from one call of each reward."""
    scoring = recipe.scoring or default_scoring(recipe.rewards)
    records = rows.to_list()
    ids = [tokenizer(t, add_special_tokens=False).input_ids for t in texts]
    columns = {"prompts": list(rows["prompt"]), **{c: list(rows[c]) for c in rows.column_names if c != "prompt"},
               "completion_ids": ids}  # as TRL passes them, for rewards that count tokens
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    computed = {r.fn: CheckedReward(r.fn).call(completions, columns, where=" in evaluation")
                for r in recipe.rewards.rewards}
    verdicts = scoring.judge(completions, columns, computed)
    lengths = [len(i) for i in ids]
    return EvalResult(
        name=name,
        n=len(texts),
        strict_accuracy=mean(verdicts.strict),
        lenient_accuracy=mean(verdicts.lenient),
        format_compliance=None if verdicts.formatted is None else mean(verdicts.formatted),
        rewards={r.name: _finite_mean(computed[r.fn]) for r in recipe.rewards.rewards},
        mean_length=mean(lengths),
        samples=[{"prompt": r["prompt"][-1]["content"], "completion": t} for r, t in list(zip(records, texts))[:5]],
    )


def _finite_mean(values: list) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return mean(finite) if finite else float("nan")


def format_table(results: list[EvalResult]) -> str:
    width = max(12, *(len(r.name) for r in results))
    rows = [("strict accuracy", lambda r: _pct(r.strict_accuracy)),
            ("lenient accuracy", lambda r: _pct(r.lenient_accuracy)),
            ("format compliance", lambda r: _pct(r.format_compliance)),
            ("mean length (tokens)", lambda r: f"{r.mean_length:.1f}")]
    for name in results[0].rewards:
        rows.append((f"reward {name}", lambda r, n=name: f"{r.rewards.get(n, float('nan')):.3f}"))
    label = max(len(row[0]) for row in rows)
    lines = [f"{'n = ' + str(results[0].n):{label}}  " + "  ".join(f"{r.name:>{width}}" for r in results)]
    lines += [f"{title:{label}}  " + "  ".join(f"{get(r):>{width}}" for r in results) for title, get in rows]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def write_json(path: Path, results: list[EvalResult], **extra) -> None:
    path.write_text(json.dumps({**extra, "results": [asdict(r) for r in results]}, indent=2) + "\n")


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
