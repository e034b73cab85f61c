"""GSM8K grade-school math with reasoning: answer in <reasoning>/<answer> tags, rewarded for the right number.

    make train RECIPE=gsm8k                       # hub dataset openai/gsm8k (config "main")
    make train RECIPE=gsm8k DATA=my_problems.jsonl  # local file with `question` and `answer` columns

The gold answer is the number after '####' in GSM8K's solution (or the whole `answer` cell when it is
just a number, such as '$72'), with commas and '$' removed. A row with neither is refused: training on
its text as the gold answer would reward nothing the model could write.

Scoring (`kit eval`, a run's before/after table), said with rewards: EVAL below.
    strict   the format (soft_xml_format), and ALL of <answer> states the gold value (answer_correct): one
             number written out, with or without a unit ('72', '$72.00', '72 dollars', '1/2' for 0.5); '18 or
             72', '10:30', '48 + 24 = 72' and '48 + 24' (the arithmetic, not its result) are wrong. '50%' is
             right for a gold of 50: GSM8K's "what percent ...?" questions record the count of percent
             ('#### 50'); a plain '0.5' there is wrong.
    lenient  the LAST NUMBER stated (last_number_correct): the last number of the <answer> tag, else of
             \\boxed{}, else after 'the answer is', else of the whole reply; '18 or 72' counts for 72. A final
             answer that strict's rule finds right ('1/2' for 0.5) counts too, so lenient is never below strict.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from kit.data import load_table, require_columns
from kit.errors import KitError
from kit.recipe import Scoring
from kit.rewards import (
    RewardBundle,
    answer_correct,
    canonical_number,
    extract_hash_answer,
    integer_answer,
    last_number_correct,
    soft_xml_format,
    strict_xml_format,
    xml_tag_count,
)

HUB_ID, HUB_CONFIG = "openai/gsm8k", "main"

SYSTEM_PROMPT = """Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>"""

# Unsloth's GSM8K notebook bundle: correctness dominates; format terms give a signal from the start.
REWARDS = RewardBundle(
    (answer_correct, 2.0),  # the number itself: '48 + 24' for 72 is the working, not the answer
    (integer_answer, 0.5),
    (strict_xml_format(), 0.5),
    (soft_xml_format(), 0.5),
    (xml_tag_count(), 0.5),
)

FORMAT = soft_xml_format()  # the <reasoning> and <answer> tags, loosely spaced
# strict: answer_correct and the format each give full marks; lenient: the last number stated is the gold one
EVAL = Scoring(strict=(answer_correct, FORMAT), lenient=last_number_correct, formatted=FORMAT)
# working that uses the question mentions its numbers: GRPO reinforcing answers that do not is warned of
FACT_COLUMNS = ("prompt",)

# The kit's defaults fit GSM8K (256 prompt + 256 completion tokens; 1 prompt x 8 generations a step).
DEFAULTS = {"grpo": {"max_steps": 250}}


def prepare(split: str, source: str | None):
    """GSM8K rows -> `prompt` (system + question as chat messages) and `answer` (gold number)."""
    table = load_table(source, HUB_ID, split, HUB_CONFIG)
    where = f"data {source or HUB_ID}"
    require_columns(table, ["question", "answer"], where)
    _check_rows(table, where)
    return table.map(
        lambda row: {"prompt": to_prompt(row["question"]), "answer": gold_answer(row["answer"]),
                     "reasoning": worked_steps(row["answer"])},
        remove_columns=table.column_names,
    )


def worked_steps(solution) -> str:
    """GSM8K's solution text before '####', without its <<48/2=24>> calculator notes."""
    return re.sub(r"<<[^>]*>>", "", str(solution).split("####")[0]).strip()


def sft_target(row: dict) -> str:
    """The worked answer in the required format, for the SFT warm start (stages: [sft, grpo])."""
    return f"<reasoning>\n{row['reasoning'] or '...'}\n</reasoning>\n<answer>\n{row['answer']}\n</answer>"


def to_prompt(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


_BARE_NUMBER = re.compile(r"[$\s]*[-\u2212]?[$\s]*[\d,]*\.?\d+\s*")  # '$72', ' 1,234 ', '-3.5'


def gold_answer(solution) -> str | None:
    """'...#### 1,234' -> '1234'; a cell holding just a number ('$72') is its own answer; otherwise None."""
    text = str(solution)
    if "####" in text:
        return extract_hash_answer(text)
    return canonical_number(text) if _BARE_NUMBER.fullmatch(text) else None


def _check_rows(table, where: str) -> None:
    for index, (question, solution) in enumerate(zip(table["question"], table["answer"])):
        if not isinstance(question, str) or not question.strip():
            raise KitError(f"{where}, row {index}: 'question' is empty; every row needs a question")
        if solution is None or not gold_answer(solution):
            raise KitError(f"{where}, row {index}: 'answer' has no final answer (got {str(solution)[:60]!r}); "
                           "end it with '#### <number>', e.g. '... so she has 72. #### 72'")


# --- sample data: GSM8K-format problems written by the kit, so smoke runs and tests work offline ---

_NAMES = ["Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jamal"]
_ITEMS = ["apples", "stickers", "marbles", "books", "pencils", "cookies", "stamps", "shells"]


def _problem(rng: random.Random) -> dict:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a, b, c = rng.randint(2, 60), rng.randint(2, 40), rng.randint(2, 9)
    kind = rng.randrange(4)
    if kind == 0:
        total = a + b
        q = f"{name} has {a} {item}. A friend gives {name} {b} more. How many {item} does {name} have now?"
        steps = f"{name} has {a} + {b} = <<{a}+{b}={total}>>{total} {item}."
    elif kind == 1:
        a = a + b
        total = a - b
        q = f"{name} had {a} {item} and gave away {b}. How many {item} are left?"
        steps = f"{a} - {b} = <<{a}-{b}={total}>>{total} {item} are left."
    elif kind == 2:
        total = a * c
        q = f"{name} buys {c} boxes of {item} with {a} {item} in each box. How many {item} is that?"
        steps = f"{c} boxes x {a} = <<{c}*{a}={total}>>{total} {item}."
    else:
        price, count = rng.randint(12, 250), rng.randint(3, 12)
        total = price * count
        q = f"A ticket costs ${price}. {name} buys {count} tickets. How many dollars does {name} spend?"
        steps = f"{count} x ${price} = $<<{count}*{price}={total}>>{total:,}."
    return {"question": q, "answer": f"{steps}\n#### {total:,}"}


def write_sample(path: Path, split: str) -> None:
    """64 train or 32 test problems in GSM8K's format (with '#### 1,234' answers), seeded by split."""
    rng = random.Random(f"gsm8k-sample-{split}")
    count = 64 if split == "train" else 32
    rows = [_problem(rng) for _ in range(count)]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows))


# --- sample completions for `python -m kit rewards check gsm8k`: what each reward should tell apart ---

def _sample(label: str, completion: str, answer: str = "72") -> dict:
    return {"label": label, "completion": [{"role": "assistant", "content": completion}], "answer": answer}


SAMPLE_COMPLETIONS = [
    _sample("right, strict format", "<reasoning>\n48 / 2 = 24, 48 + 24 = 72\n</reasoning>\n<answer>\n72\n</answer>\n"),
    _sample("right, loose format", "<reasoning>48 + 24 = 72</reasoning> <answer>72</answer>"),
    _sample("right, written as 72.0", "<reasoning>\n48 + 24\n</reasoning>\n<answer>\n72.0\n</answer>\n"),
    _sample("wrong number", "<reasoning>\n48 + 48 = 96\n</reasoning>\n<answer>\n96\n</answer>\n"),
    _sample("two numbers, last right", "<reasoning>\n48 or 72\n</reasoning>\n<answer>\n48 or 72\n</answer>\n"),
    _sample("the sum, not its result: answer_correct unpaid",
            "<reasoning>\n48 / 2 = 24\n</reasoning>\n<answer>\n48 + 24\n</answer>\n"),
    _sample("right, then chatter", "<reasoning>\n48 + 24\n</reasoning>\n<answer>\n72\n</answer>\nHope this helps!"),
    _sample("no tags", "She sold 72 clips altogether."),
    _sample("empty", ""),
]
