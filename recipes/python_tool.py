"""Arithmetic with a Python tool: the model runs code in the sandbox and answers with what it printed.

    make demo-tools                                      # SmolLM2-135M-Instruct on the CPU: SFT, GRPO, export
    make train RECIPE=python_tool                        # GSM8K from the hub, the Python tool beside it
    make train RECIPE=python_tool PROFILE=smoke          # the offline sample, the kit's tiny model

Offline (`data.path: sample`, the smoke profile, the CPU demo): products of two three-digit numbers
("What is 347 times 862?"), beyond what a small model computes in its head but one line of Python. For
real runs (no data.path) the rows are GSM8K's (openai/gsm8k), the same tool and answer format: tool-
integrated reasoning. Either way a completion is the assistant's turns and the tool's results between
them; it is paid for the right number in `<answer>N</answer>`, written out in the last turn, and a little for
a tool call that ran. What the tool printed is never compared with anything, so printing a fake result earns
nothing; tool_ran reads only whether the run finished and printed (kit.tools.python.finished_and_printed), so an
empty call, a timeout or code that raised earns nothing either.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from kit.data import load_table, require_columns
from kit.recipe import Scoring
from kit.recipes import gsm8k
from kit.rewards import RewardBundle, exact_match, last_number_correct, tag_format
from kit.tools import python_tool
from kit.tools.python import NO_OUTPUT, finished_and_printed

HUB_ID, HUB_CONFIG = gsm8k.HUB_ID, gsm8k.HUB_CONFIG  # gsm8k's questions, with a tool to work them
SYSTEM_PROMPT = ("Use the python tool to compute, then give the final answer as <answer>N</answer>.")
TOOLS = [python_tool(timeout=5.0, memory_mb=256)]
# a number: digits, commas between groups of three, a decimal part ('299114', '-1,234.5'; not ',' or '1,2')
ANSWER_FORMAT = tag_format("answer", r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def tool_ran(completions, **kwargs) -> list[float]:
    """1.0 when a tool call ran its code to the end, within its limits, and printed something: not an empty
    call, one that printed nothing, timed out, was stopped or raised, nor TRL's `{'error': ...}` for a call that
    could not run (kit.tools.python.finished_and_printed). Partial credit for the habit the answer needs, so GRPO
    has a signal while few answers are right yet (a fifth of a right answer's pay)."""
    return [float(any(m.get("role") == "tool" and finished_and_printed(m.get("content"))
                      for m in c if isinstance(m, dict))) if isinstance(c, list) else 0.0 for c in completions]


# exact_match: the number as the gold writes it. Chosen when answer_correct still paid an expression equal to the
# gold value (until issue 43): GRPO found that out within ten steps of the CPU demo ("<answer>481*263</answer>"
# paid in full, the tool left unused).
REWARDS = RewardBundle(
    (exact_match, 1.0),  # the last turn's <answer> is the number itself
    (ANSWER_FORMAT, 0.2),  # the last turn is one <answer>N</answer>
    (tool_ran, 0.2),  # a tool call that ran to the end and printed
)
# strict: right, in the format; lenient: the last number of the last turn is right; formatted: the format
EVAL = Scoring(strict=(exact_match, ANSWER_FORMAT), lenient=last_number_correct, formatted=ANSWER_FORMAT)

DEFAULTS = {
    # the tool's schema and the template's instructions take ~200 prompt tokens; a call and its result ~40
    "data": {"max_prompt_length": 320},
    "grpo": {"max_completion_length": 128, "max_tool_calling_iterations": 2},
}

SAMPLE_SIZES = {"train": 512, "test": 200}


def prepare(split: str, source: str | None):
    """GSM8K from the hub (source None), or a local file: GSM8K's columns, or the sample's `prompt`/`answer`."""
    table = load_table(source, HUB_ID, split, HUB_CONFIG)
    if "prompt" in table.column_names:
        require_columns(table, ["prompt", "answer", "expression", "result"], f"data {source}")
        return table.map(lambda row: {"answer": str(row["answer"])})
    gsm8k_rows = gsm8k.prepare(split, source)  # checks every row, extracts the gold number
    solutions = table["answer"]
    return gsm8k_rows.map(lambda row, i: {"prompt": to_prompt(row["prompt"][-1]["content"]),
                                          **last_calculation(solutions[i])},
                          with_indices=True, remove_columns=["reasoning"])


def to_prompt(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


def last_calculation(solution: str) -> dict:
    """GSM8K's last <<48/2=24>> calculator note as the warm start's tool call and result ('48/2', '24')."""
    notes = re.findall(r"<<([^=>]+)=([^>]*)>>", str(solution))
    expression, result = notes[-1] if notes else ("", "")
    return {"expression": expression, "result": result}


def products(split: str) -> list[tuple[int, int]]:
    """Pairs of three-digit numbers, disjoint between the splits, the same on every machine."""
    rng = random.Random("python-tool-products")
    seen, pairs = set(), {"test": [], "train": []}
    for name in ("test", "train"):
        while len(pairs[name]) < SAMPLE_SIZES[name]:
            pair = (rng.randint(100, 999), rng.randint(100, 999))
            if pair not in seen:
                seen.add(pair)
                pairs[name].append(pair)
    return pairs[split]


def product_row(a: int, b: int) -> dict:
    return {"prompt": to_prompt(f"What is {a} times {b}?"), "answer": str(a * b), "expression": f"{a} * {b}",
            "result": str(a * b)}


def write_sample(path: Path, split: str) -> None:
    rows = [product_row(a, b) for a, b in products(split)]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows))


def sft_target(row: dict) -> list[dict]:
    """A worked tool call: the code, what it prints (the row's `result`: no sandbox run per row), the answer."""
    if not row["expression"]:
        return [{"role": "assistant", "content": f"<answer>{row['answer']}</answer>"}]
    code = row["expression"]  # a last expression's value is printed: the shortest call
    return [{"role": "assistant", "content": "", "tool_calls": [call(code)]},
            {"role": "tool", "name": "python", "content": row["result"]},
            {"role": "assistant", "content": f"<answer>{row['answer']}</answer>"}]


def call(code: str) -> dict:
    return {"type": "function", "function": {"name": "python", "arguments": {"code": code}}}


def _sample(label: str, messages: list[dict], answer: str = "299114") -> dict:
    return {"label": label, "completion": messages, "answer": answer}


SAMPLE_COMPLETIONS = [
    _sample("tool, then right", [{"role": "assistant", "content": "", "tool_calls": [call("print(347 * 862)")]},
                                 {"role": "tool", "name": "python", "content": "299114"},
                                 {"role": "assistant", "content": "<answer>299114</answer>"}]),
    _sample("tool, then misread", [{"role": "assistant", "content": "", "tool_calls": [call("print(347 * 862)")]},
                                   {"role": "tool", "name": "python", "content": "299114"},
                                   {"role": "assistant", "content": "<answer>299141</answer>"}]),
    _sample("cut off after the tool", [{"role": "assistant", "content": "", "tool_calls": [call("347 * 862")]},
                                       {"role": "tool", "name": "python", "content": "299114"}]),
    _sample("no tool, guessed", [{"role": "assistant", "content": "<answer>300000</answer>"}]),
    _sample("the expression, not the number: unpaid", [{"role": "assistant", "content": "<answer>347*862</answer>"}]),
    # the results python_tool returns for these calls (kit/tools/python.py): a run that did not finish with output
    _sample("empty call, then right: tool_ran unpaid", [
        {"role": "assistant", "content": "", "tool_calls": [call("")]},
        {"role": "tool", "name": "python", "content": NO_OUTPUT},
        {"role": "assistant", "content": "<answer>299114</answer>"}]),
    _sample("the code raised, then right: tool_ran unpaid", [
        {"role": "assistant", "content": "", "tool_calls": [call("print(347 * 862)\n1 / 0")]},
        {"role": "tool", "name": "python", "content": "error: ZeroDivisionError: division by zero; it printed: 299114"},
        {"role": "assistant", "content": "<answer>299114</answer>"}]),
    _sample("right, no tags", [{"role": "assistant", "content": "It is 299114."}]),
    _sample("empty", [{"role": "assistant", "content": ""}]),
]
