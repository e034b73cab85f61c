"""Competition math with visible reasoning: `<think>...</think>`, then the answer in `\\boxed{}`, judged by math-verify.

    make train RECIPE=math_think                       # hub dataset DigitalLearningGmbH/MATH-lighteval
    make train RECIPE=math_think DATA=problems.jsonl    # local file: `problem`, and `answer` or `solution`

The format Qwen3 and the DeepSeek-R1 distills write. The distills' chat template ends the prompt with
`<think>`, so their reply opens inside the block: the format reward accepts a reply without the opening tag.
Gold answer: the `answer` column when there is one (HuggingFaceH4/MATH-500: `problem`, `solution`,
`answer`; test split only, the usual held-out set), else the last `\\boxed{}` of `solution`
(MATH-lighteval: `problem`, `level`, `solution`, `type`; train 7,500, test 5,000; MATH-500 is drawn
from MATH's test split, so training on lighteval's train split leaves it unseen). Rows with neither are
dropped and counted. The answer is compared with math-verify (`\\frac{3}{4}`, `0.75` and `3/4` agree).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

from kit.data import load_table, require_columns, rows_kept
from kit.errors import KitError
from kit.recipe import Scoring
from kit.rewards import RewardBundle, extract_boxed, final_answer, math_equivalent, max_length_penalty
from kit.rewards.text import completion_text

HUB_ID, HUB_CONFIG = "DigitalLearningGmbH/MATH-lighteval", "default"
OPEN, CLOSE = "<think>", "</think>"

SYSTEM_PROMPT = ("Think the problem through inside <think> </think> tags, then state the final answer in "
                 "\\boxed{}. For example:\n<think>\n...\n</think>\nThe answer is $\\boxed{\\frac{3}{4}}$.")


def split_thinking(text: str) -> tuple[str, str] | None:
    """(reasoning, what follows it) for a reply that opens with one think block; None otherwise."""
    body = text.lstrip()
    body = body[len(OPEN):] if body.startswith(OPEN) else body  # the template may have written the opening tag
    if OPEN in body or body.count(CLOSE) != 1:
        return None
    thinking, after = body.split(CLOSE)
    return (thinking.strip(), after) if thinking.strip() else None


def stated_answer(text: str) -> str | None:
    """The last \\boxed{} after the reasoning; in a reply without think tags, the last one anywhere."""
    if CLOSE in text:
        return extract_boxed(text.rsplit(CLOSE, 1)[1])
    return None if OPEN in text else extract_boxed(text)  # an unclosed block is unfinished thinking


def equivalent(given: str | None, gold) -> bool:
    # math_equivalent on the box alone: over a whole reply math-verify may pick a box from the reasoning
    return bool(given) and math_equivalent([f"\\boxed{{{given}}}"], [gold])[0] == 1.0


def think_format(completions, **kwargs) -> list[float]:
    """0.5 for one non-empty <think>...</think> block first, plus 0.5 for a \\boxed{} answer after it."""
    scores = []
    for completion in completions:
        parts = split_thinking(completion_text(completion))
        scores.append(0.0 if parts is None else 0.5 + 0.5 * bool(extract_boxed(parts[1])))
    return scores


def boxed_correct(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when math-verify finds the \\boxed{} answer after the reasoning equal to the gold one."""
    return [None if gold is None or not str(gold).strip() else
            float(equivalent(stated_answer(completion_text(c)), gold)) for c, gold in zip(completions, answer)]


think_format.reward_range = boxed_correct.reward_range = (0.0, 1.0)  # `kit rewards check` holds them to it
MAX_WORDS = 300  # full marks up to 300 words, none at 600: a light push to finish, not to stop thinking

REWARDS = RewardBundle(
    (boxed_correct, 2.0),
    (think_format, 0.5),
    (max_length_penalty(MAX_WORDS), 0.1),
)

DEFAULTS = {
    "model": {"max_seq_length": 1536},  # 384 prompt + 1024 completion tokens, with room to spare
    "data": {"max_prompt_length": 384},  # MATH problems with the system prompt: most under 300 tokens
    "grpo": {
        "max_completion_length": 1024,  # reasoning is long; a reply cut off before its box earns no correctness
        "max_steps": 250,
    },
}


def stated_anywhere(completions, answer, **kwargs) -> list[float | None]:
    """1.0 when the final answer, wherever it stands (an <answer>, a box, "the answer is"), is the gold one."""
    return [None if gold is None or not str(gold).strip() else
            float(equivalent(final_answer(completion_text(c)), gold)) for c, gold in zip(completions, answer)]


# strict: the box after the reasoning is right and the reply is one think block then a box (think_format's
# full marks); lenient: the final answer is right wherever it stands; formatted: think_format's full marks
EVAL = Scoring(strict=(boxed_correct, think_format), lenient=stated_anywhere, formatted=think_format)
# working that uses the question mentions its numbers: GRPO reinforcing answers that do not is warned of
FACT_COLUMNS = ("prompt",)


def prepare(split: str, source: str | None):
    """MATH rows -> `prompt` (system + problem), `answer` (gold LaTeX) and `reasoning` (the worked solution)."""
    table = load_table(source, HUB_ID, split, HUB_CONFIG)
    where = f"data {source or HUB_ID}"
    require_columns(table, ["problem"], where)
    if "answer" not in table.column_names and "solution" not in table.column_names:
        raise KitError(f"{where} has neither 'answer' nor 'solution'; the gold answer is one of them (the "
                       f"solution's last \\boxed{{}}); it has: {', '.join(table.column_names)}")
    rows = [to_row(row) for row in table.to_list()]
    kept = [row for row in rows if row["answer"] and row["prompt"][1]["content"]]
    return rows_kept(kept, len(rows), where, "problems without a gold answer (an 'answer', or a \\boxed{} in the "
                     "'solution') or without a problem", "no problem has a gold answer; give each an 'answer' column "
                     "or end its 'solution' with \\boxed{...}")


def to_row(row: dict) -> dict:
    solution = str(row.get("solution") or "")
    gold = str(row.get("answer") or "").strip() or extract_boxed(solution) or ""
    return {"prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                       {"role": "user", "content": str(row["problem"] or "").strip()}],
            "answer": gold, "reasoning": unboxed(solution).strip()}


def unboxed(text: str) -> str:
    """The solution with each \\boxed{X} written as X: in the reasoning the answer is stated, not boxed."""
    while (start := text.find("\\boxed{")) >= 0:
        depth, end = 0, -1
        for index in range(start + len("\\boxed"), len(text)):
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            if depth == 0:
                end = index
                break
        if end < 0:  # unbalanced braces: leave the rest as written
            return text
        text = text[:start] + text[start + len("\\boxed{"):end] + text[end + 1:]
    return text


def sft_target(row: dict) -> str:
    """The worked solution inside <think>, then the gold answer boxed, for the SFT warm start."""
    return f"{OPEN}\n{row['reasoning'] or '...'}\n{CLOSE}\nThe answer is $\\boxed{{{row['answer']}}}$."


# --- sample data: small problems in MATH-lighteval's format, generated here so runs and tests work offline ---

def latex(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _problem(rng: random.Random) -> tuple[str, str, str]:
    """(problem, worked steps, answer in LaTeX), one of seven kinds."""
    a, b, c, d = rng.randint(1, 9), rng.randint(2, 9), rng.randint(1, 9), rng.randint(2, 9)
    kind = rng.randrange(7)
    if kind == 0:
        total = Fraction(a, b) + Fraction(c, d)
        return (f"Compute $\\frac{{{a}}}{{{b}}} + \\frac{{{c}}}{{{d}}}$. Express your answer as a common fraction.",
                f"Over the denominator {b * d}: $\\frac{{{a * d}}}{{{b * d}}} + \\frac{{{c * b}}}{{{b * d}}} = "
                f"\\frac{{{a * d + c * b}}}{{{b * d}}}$, which reduces to ${latex(total)}$.", latex(total))
    if kind == 1:
        product = Fraction(a, b) * Fraction(c, d)
        return (f"What is $\\frac{{{a}}}{{{b}}} \\cdot \\frac{{{c}}}{{{d}}}$?",
                f"Multiply across: $\\frac{{{a * c}}}{{{b * d}}} = {latex(product)}$.", latex(product))
    if kind == 2:
        x = Fraction(d * 3 - c, a + 1)
        return (f"Solve for $x$: ${a + 1}x + {c} = {d * 3}$.",
                f"Subtract {c}: ${a + 1}x = {d * 3 - c}$, so $x = {latex(x)}$.", latex(x))
    if kind == 3:
        root, inside = rng.randint(2, 6), rng.choice([2, 3, 5, 6, 7])
        return (f"Simplify $\\sqrt{{{root * root * inside}}}$.",
                f"${root * root * inside} = {root * root} \\cdot {inside}$ and $\\sqrt{{{root * root}}} = {root}$, "
                f"so the root is ${root}\\sqrt{{{inside}}}$.", f"{root}\\sqrt{{{inside}}}")
    if kind == 4:
        x, y, z = rng.randint(11, 40), rng.randint(3, 19), rng.randint(5, 99)
        return (f"Compute ${x} \\times {y} - {z}$.", f"${x} \\times {y} = {x * y}$, and ${x * y} - {z} = {x * y - z}$.",
                str(x * y - z))
    if kind == 5:
        x = rng.randint(-6, 9)
        value = x * x - b * x
        return (f"If $x = {x}$, what is the value of $x^2 - {b}x$?",
                f"$({x})^2 - {b} \\cdot ({x}) = {x * x} - ({b * x}) = {value}$.", str(value))
    n = rng.randint(2, 12) * 6
    part = Fraction(a, b) * n
    return (f"What is $\\frac{{{a}}}{{{b}}}$ of {n}?", f"$\\frac{{{a}}}{{{b}}} \\cdot {n} = {latex(part)}$.",
            latex(part))


HELD_OUT, TRAIN = 24, 60


def sample_rows() -> list[dict]:
    """84 distinct problems, the same on every machine: the first 24 held out, the next 60 for training."""
    rng, rows, seen = random.Random("math-think-sample"), [], set()
    while len(rows) < HELD_OUT + TRAIN:
        problem, steps, answer = _problem(rng)
        if problem not in seen:
            seen.add(problem)
            rows.append({"problem": problem, "solution": f"{steps} The answer is $\\boxed{{{answer}}}$."})
    return rows


def write_sample(path: Path, split: str) -> None:
    """24 test or 60 train problems in MATH-lighteval's format (`problem`, `solution` ending in \\boxed{})."""
    rows = sample_rows()
    chosen = rows[:HELD_OUT] if split == "test" else rows[HELD_OUT:]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in chosen))


# --- sample completions for `python -m kit rewards check math_think` (gold: 3/4) ---

def _sample(label: str, completion: str, answer: str = "\\frac{3}{4}") -> dict:
    return {"label": label, "completion": [{"role": "assistant", "content": completion}], "answer": answer}


_LONG = "<think>\n" + "Check the common denominator again. " * 120 + "\n</think>\nSo $\\boxed{\\frac{3}{4}}$."
SAMPLE_COMPLETIONS = [
    _sample("right, think then box",
            "<think>\n1/2 + 1/4 = 2/4 + 1/4 = 3/4\n</think>\nThe answer is $\\boxed{\\frac{3}{4}}$."),
    _sample("right, written 0.75", "<think>\nhalf plus a quarter\n</think>\n$\\boxed{0.75}$"),
    _sample("right, template opened <think>", "1/2 + 1/4 = 3/4\n</think>\n$\\boxed{\\frac{3}{4}}$"),
    _sample("right, rambling", _LONG),
    _sample("wrong answer", "<think>\n1/2 + 1/4 = 2/6\n</think>\nThe answer is $\\boxed{\\frac{1}{3}}$."),
    _sample("boxed only in thinking", "<think>\nit is \\boxed{\\frac{3}{4}}\n</think>\nDone."),
    _sample("no think block", "The answer is $\\boxed{\\frac{3}{4}}$."),
    _sample("two think blocks", "<think>a</think><think>b</think> $\\boxed{\\frac{3}{4}}$"),
    _sample("empty", ""),
]
