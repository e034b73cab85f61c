"""Length rewards, as factories.

Plain length (scores in [0, 1]):
    ideal_length(n), min_length(n), max_length_penalty(n)
Published shapes, in their published ranges (`fn.reward_range`):
    soft_overlong_punishment(max_length, cache)   DAPO's Eq. 13: 0, then down to -1 at the limit, -1 past it
    cosine_scaled_length(correctness, ...)        short right answers earn most, short wrong ones lose most
    kimi_length(correctness)                      Kimi 1.5: within a prompt's group, shorter is better

What a length is, `unit`: "tokens" (the ids TRL passes a reward as `completion_ids`, else the `tokenizer`'s),
"words" or "chars". Unset, it is tokens when a tokenizer is given, else words.
"""

from __future__ import annotations

import inspect
import math

from kit.errors import KitError
from kit.rewards.guard import is_row_optional
from kit.rewards.text import completion_text
from kit.rewards.traits import with_traits

UNITS = ("tokens", "words", "chars")


def _counter(tokenizer=None, unit: str | None = None):
    """`lengths(completions, completion_ids)`: one length per completion, in `unit`."""
    unit = unit or ("tokens" if tokenizer is not None else "words")
    if unit not in UNITS:
        raise KitError(f"length unit '{unit}' is not one of: {', '.join(UNITS)}")

    def lengths(completions, completion_ids=None) -> list[int]:
        texts = [completion_text(c) for c in completions]
        if unit == "words":
            return [len(t.split()) for t in texts]
        if unit == "chars":
            return [len(t) for t in texts]
        if completion_ids is not None:  # the tokens the policy generated: exact, nothing re-tokenized
            return [len(ids) for ids in completion_ids]
        if tokenizer is None:
            raise KitError("this length reward counts tokens, and was given neither completion_ids (TRL passes "
                           "them in training) nor a tokenizer: pass tokenizer=..., or unit='words'")
        return [len(tokenizer(t, add_special_tokens=False).input_ids) for t in texts]

    return lengths


def ideal_length(target: int, tokenizer=None, unit: str | None = None):
    """1.0 at exactly `target` units, falling linearly to 0 at 0 and at 2 x target."""
    lengths = _counter(tokenizer, unit)

    def length_near_target(completions, completion_ids=None, **kwargs) -> list[float]:
        return [max(0.0, 1.0 - abs(n - target) / target) for n in lengths(completions, completion_ids)]

    return length_near_target


def min_length(minimum: int, tokenizer=None, unit: str | None = None):
    """Partial credit up to `minimum` units: length / minimum, capped at 1."""
    lengths = _counter(tokenizer, unit)

    def long_enough(completions, completion_ids=None, **kwargs) -> list[float]:
        return [min(1.0, n / minimum) for n in lengths(completions, completion_ids)]

    return long_enough


def max_length_penalty(maximum: int, tokenizer=None, unit: str | None = None):
    """1.0 up to `maximum` units, then falling linearly to 0 at 2 x maximum."""
    lengths = _counter(tokenizer, unit)

    def short_enough(completions, completion_ids=None, **kwargs) -> list[float]:
        return [max(0.0, min(1.0, 2.0 - n / maximum)) for n in lengths(completions, completion_ids)]

    return short_enough


def soft_overlong_punishment(max_length: int, cache: int, tokenizer=None, unit: str = "tokens"):
    """DAPO's soft overlong punishment (arXiv 2503.14476, Eq. 13), in [-1, 0]: no penalty up to
    `max_length - cache` tokens, then a linear fall to -1 at `max_length`, and -1 beyond it.

    Set `max_length` to `grpo.max_completion_length`: a completion cut off there gets -1, one that ends
    within the last `cache` tokens before it gets part of that.
    """
    if not 0 < cache <= max_length:
        raise KitError(f"soft_overlong_punishment: cache must be in (0, max_length]; got cache={cache}, "
                       f"max_length={max_length}")
    lengths = _counter(tokenizer, unit)
    free = max_length - cache

    def soft_overlong(completions, completion_ids=None, **kwargs) -> list[float]:
        return [0.0 if n <= free else (free - n) / cache if n <= max_length else -1.0
                for n in lengths(completions, completion_ids)]

    return with_traits(soft_overlong, reward_range=(-1.0, 0.0))


def cosine_scaled_length(correctness, max_length: int = 1000, correct: tuple[float, float] = (0.5, 1.0),
                         wrong: tuple[float, float] = (-1.0, -0.5), correct_at: float = 1.0,
                         tokenizer=None, unit: str = "chars"):
    """Length scaled on a cosine that depends on being right (Yeo et al., arXiv 2502.03373): a right
    answer earns from `correct[1]` when empty down to `correct[0]` at `max_length`; a wrong one from
    `wrong[0]` when empty up to `wrong[1]` at `max_length` (a long attempt is penalised less than a short
    guess). Past `max_length` the values stay at the ends. Right means `correctness` gives `correct_at`
    or more; where it gives None (does not apply) this does too. Defaults are open-r1's (characters, 1000).
    """
    lengths = _counter(tokenizer, unit)

    def cosine_length(completions, completion_ids=None, **kwargs) -> list[float | None]:
        right = _judged(correctness, completions, completion_ids, kwargs, correct_at)
        scores = []
        for n, is_right in zip(lengths(completions, completion_ids), right):
            if is_right is None:
                scores.append(None)
                continue
            at_zero, at_max = (correct[1], correct[0]) if is_right else (wrong[0], wrong[1])
            shrink = 0.5 * (1.0 + math.cos(math.pi * min(1.0, n / max_length)))  # 1 when empty, 0 at max_length
            scores.append(at_max + (at_zero - at_max) * shrink)
        return scores

    with_traits(cosine_length, reward_range=(min(*correct, *wrong), max(*correct, *wrong)))
    return _reads_columns_of(correctness, cosine_length)


def kimi_length(correctness, correct_at: float = 1.0, tokenizer=None, unit: str = "chars"):
    """Kimi 1.5's length reward (arXiv 2501.12599), in [-0.5, 0.5]: among the completions of one prompt,
    lam = 0.5 - (len - shortest) / (longest - shortest); a right answer gets lam, a wrong one min(0, lam),
    so only right answers are paid for being short. All of a group the same length: 0. Completions are
    grouped by their prompt (TRL passes `prompts`); without prompts the batch is one group.
    """
    lengths = _counter(tokenizer, unit)

    def kimi_length(completions, completion_ids=None, prompts=None, **kwargs) -> list[float | None]:
        right = _judged(correctness, completions, completion_ids, {"prompts": prompts, **kwargs}, correct_at)
        sizes = lengths(completions, completion_ids)
        groups: dict[str, list[int]] = {}
        for index, prompt in enumerate(prompts if prompts is not None else [None] * len(completions)):
            groups.setdefault(repr(prompt), []).append(index)
        scores: list[float | None] = [None] * len(completions)
        for members in groups.values():
            shortest, longest = min(sizes[i] for i in members), max(sizes[i] for i in members)
            for i in members:
                if right[i] is None:
                    continue
                lam = 0.0 if longest == shortest else 0.5 - (sizes[i] - shortest) / (longest - shortest)
                scores[i] = lam if right[i] else min(0.0, lam)
        return scores

    with_traits(kimi_length, reward_range=(-0.5, 0.5))
    return _reads_columns_of(correctness, kimi_length)


def _judged(correctness, completions, completion_ids, columns: dict, at_least: float) -> list[bool | None]:
    """Right or not per completion by `correctness`; None where it does not apply (None, NaN)."""
    values = correctness(completions, completion_ids=completion_ids, **columns)
    return [None if v is None or not math.isfinite(v) else v >= at_least for v in values]


def _reads_columns_of(correctness, fn):
    """`fn` asks for the dataset columns `correctness` reads (the kit checks they exist before training), and
    may return None for a whole batch where `correctness` may."""
    own = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD]
    columns = [p for p in inspect.signature(correctness).parameters.values()
               if p.name not in {q.name for q in own} and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    keyword_only = [p.replace(kind=p.KEYWORD_ONLY) for p in columns]
    rest = inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)
    fn.__signature__ = inspect.Signature([*own, *keyword_only, rest])
    return with_traits(fn, row_optional=is_row_optional(correctness))
