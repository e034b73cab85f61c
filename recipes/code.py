"""Python functions from a one-line task (MBPP), paid for passing hidden tests run in the kit's sandbox.

    make train RECIPE=code                        # hub dataset google-research-datasets/mbpp ("sanitized")
    make train RECIPE=code DATA=my_tasks.jsonl      # local file: `prompt` (or `text`) and `test_list` columns

The prompt shows the task and ONE of its tests, so the model learns the function's name and signature;
the others go to the `tests` column, which only the reward reads. Paying for the shown test would pay a
model for returning the value it was shown, so the reward counts hidden tests only (evaluation counts
all of them, as MBPP's pass@1 does). `passes_tests` gives partial credit: the fraction of hidden tests
passed. Every test runs in kit/sandbox: only the call goes in, the comparison stays outside.

MBPP's configs name the task differently: "sanitized" (hand-checked; train 120, test 257 rows) has
`prompt`, `code`, `test_imports`, `test_list`; "full" (train 374, test 500) has `text`, `code`,
`test_list`, `test_setup_code`. A row needs two tests the sandbox can check (one shown, one hidden);
rows with fewer, or with setup code the tests depend on, are dropped and counted.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from kit.data import load_table, require_columns, rows_kept
from kit.errors import KitError
from kit.recipe import Scoring
from kit.rewards import RewardBundle, code_block, passes_tests, syntax_valid, with_traits
from kit.rewards.code import is_io_test, row_tests
from kit.sandbox import UnsupportedTest, split_test

HUB_ID, HUB_CONFIG = "google-research-datasets/mbpp", "sanitized"

SYSTEM_PROMPT = ("Write the Python function the task asks for. Reply with the complete function in one ```python "
                 "code block. Hidden tests call it by the name the example test uses.")

CODE_TESTS = passes_tests()  # named code_tests; runs in the sandbox, which the run checks before training
PYTHON_BLOCK = code_block("python")  # ```python (or ```py): 1.0; an untagged fence 0.5; another language 0
REWARDS = RewardBundle(
    (CODE_TESTS, 2.0),  # fraction of the hidden tests passed
    (syntax_valid, 0.25),  # the code parses (an empty reply parses too: the tests are what pays)
    (PYTHON_BLOCK, 0.25),  # a fenced Python block, so the code can be found
)

DEFAULTS = {
    "data": {"max_prompt_length": 320},  # system + task + one test: MBPP prompts are ~100-250 tokens
    "grpo": {
        "max_completion_length": 384,  # MBPP's reference solutions are a few lines; 384 leaves room for a comment
        "max_steps": 250,  # ~2 passes over sanitized's 120 training tasks
    },
}


def prepare(split: str, source: str | None):
    """MBPP rows -> `prompt` (task + one shown test), `tests` (the hidden ones), `example_test`, `solution`."""
    table = load_table(source, HUB_ID, split, HUB_CONFIG)
    where = f"data {source or HUB_ID}"
    require_columns(table, ["test_list"], where)
    task_column = "prompt" if "prompt" in table.column_names else "text"
    require_columns(table, [task_column], where)
    rows = [row for row in map(to_row, table.to_list(), [task_column] * len(table)) if row is not None]
    return rows_kept(rows, len(table), where, "tasks without two tests the sandbox can check (one shown, one "
                     "hidden), or with test setup code", "no task has two tests the sandbox can check; write one "
                     "assert per case, e.g. `assert add(2, 3) == 5` (kit/sandbox/split_tests.py says which tests it "
                     "takes)")


def checkable(tests) -> list[str]:
    """The row's assert tests the sandbox can split into a call and an outside check, in order."""
    kept = []
    for test in row_tests(tests) or []:
        if is_io_test(test):  # a stdin/stdout pair: this recipe asks for a function, not a program
            continue
        try:
            kept.append(split_test(test).source)
        except UnsupportedTest:
            continue
    return kept


def to_row(row: dict, task_column: str) -> dict | None:
    tests = checkable(row["test_list"])
    if len(tests) < 2 or str(row.get("test_setup_code") or "").strip():
        return None
    imports = row.get("test_imports") or []
    return {"prompt": to_prompt(str(row[task_column]).strip(), tests[0], list(imports)), "tests": tests[1:],
            "example_test": tests[0], "solution": str(row.get("code") or "").strip()}


def to_prompt(task: str, example: str, imports: list[str]) -> list[dict]:
    shown = f"{task}\n\nYour function must pass tests like this one:\n```python\n{example}\n```"
    if imports:
        shown += f"\nThe tests first run: {'; '.join(imports)}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": shown}]


def sft_target(row: dict) -> str:
    """The reference solution in the required format, for the SFT warm start (stages: [sft, grpo])."""
    if not row.get("solution"):
        raise KitError("a code row without a reference solution (MBPP's `code` column) cannot be an SFT target; "
                       "add the column, or train with stages: [grpo]")
    return f"```python\n{row['solution']}\n```"


# --- evaluation: every test counts, the shown one included (MBPP's pass@1) ---

def every_test(completions, example_test, tests, **kwargs) -> list[float | None]:
    """The fraction of ALL the row's tests passed, the shown one too: evaluation's measure, not a training reward."""
    return CODE_TESTS(completions, tests=[[shown, *hidden] for shown, hidden in zip(example_test, tests)])


every_test = with_traits(every_test, runs_model_code=True)  # `kit eval` and a run check the sandbox first

# strict: all tests pass, from a ```python block that parses; lenient: the code may stand bare
EVAL = Scoring(strict=(every_test, PYTHON_BLOCK, syntax_valid), lenient=every_test,
               formatted=(PYTHON_BLOCK, syntax_valid))


# --- sample data: small functions written here, their tests computed from the reference solution ---

# (name, parameters, return expression, task, argument tuples); the first tuple is the shown test.
_TASKS = [
    ("add", "a, b", "a + b", "add two numbers", [(2, 3), (-4, 4), (10, 25), (0, 7)]),
    ("subtract", "a, b", "a - b", "subtract the second number from the first", [(9, 4), (3, 8), (0, 0)]),
    ("multiply", "a, b", "a * b", "multiply two numbers", [(3, 4), (-2, 6), (7, 0)]),
    ("square", "n", "n * n", "square a number", [(3,), (-5,), (12,)]),
    ("cube", "n", "n ** 3", "cube a number", [(2,), (-3,), (10,)]),
    ("is_even", "n", "n % 2 == 0", "check whether a number is even", [(4,), (7,), (0,), (-3,)]),
    ("absolute", "n", "n if n >= 0 else -n", "return the absolute value of a number", [(-7,), (5,), (0,)]),
    ("max_of_list", "items", "max(items)", "find the largest number in a list", [([3, 9, 2],), ([-5, -1],), ([4],)]),
    ("min_of_list", "items", "min(items)", "find the smallest number in a list", [([3, 9, 2],), ([-5, -1],), ([8],)]),
    ("sum_list", "items", "sum(items)", "add up the numbers in a list", [([1, 2, 3],), ([],), ([-4, 10, 5],)]),
    ("reverse_string", "s", "s[::-1]", "reverse a string", [("hello",), ("",), ("racecar",), ("ab c",)]),
    ("is_palindrome", "s", "s == s[::-1]", "check whether a string reads the same backwards",
     [("level",), ("python",), ("",), ("abba",)]),
    ("count_vowels", "s", "sum(c in 'aeiouAEIOU' for c in s)", "count the vowels in a string",
     [("banana",), ("sky",), ("AEIOU and more",)]),
    ("last_element", "items", "items[-1]", "return the last element of a list", [([1, 2, 3],), (["a"],), ([[1], 2],)]),
    ("fizzbuzz", "n", "'FizzBuzz' if n % 15 == 0 else 'Fizz' if n % 3 == 0 else 'Buzz' if n % 5 == 0 else str(n)",
     "return 'Fizz' for multiples of 3, 'Buzz' for multiples of 5, 'FizzBuzz' for both, else the number as text",
     [(3,), (10,), (30,), (7,)]),
    ("factorial", "n", "1 if n < 2 else n * factorial(n - 1)", "compute the factorial of n", [(5,), (0,), (10,)]),
    ("fibonacci", "n", "n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
     "return the n-th Fibonacci number, counting fibonacci(0) = 0", [(7,), (1,), (12,)]),
    ("sum_of_digits", "n", "sum(int(d) for d in str(abs(n)))", "add up the digits of an integer",
     [(123,), (-905,), (0,)]),
    ("count_char", "s, ch", "s.count(ch)", "count how often a character occurs in a string",
     [("mississippi", "s"), ("abc", "z"), ("aaa", "a")]),
    ("capitalize_words", "s", "' '.join(w.capitalize() for w in s.split())", "capitalize each word of a sentence",
     [("hello world",), ("python is fun",), ("a",)]),
    ("word_count", "s", "len(s.split())", "count the words in a sentence",
     [("one two three",), ("",), ("  spaced   out ",)]),
    ("remove_duplicates", "items", "list(dict.fromkeys(items))",
     "remove duplicates from a list, keeping the first occurrence of each", [([1, 2, 1, 3, 2],), ([],), (["a", "a"],)]),
    ("even_numbers", "items", "[x for x in items if x % 2 == 0]", "keep the even numbers of a list",
     [([1, 2, 3, 4],), ([5, 7],), ([0, -2, 3],)]),
    ("square_all", "items", "[x * x for x in items]", "square every number in a list", [([1, 2, 3],), ([],), ([-4],)]),
    ("second_largest", "items", "sorted(set(items))[-2]", "find the second largest distinct number in a list",
     [([4, 1, 9, 7],), ([5, 5, 3],), ([-1, -8, -3],)]),
    ("average", "items", "sum(items) / len(items)", "compute the mean of a list of numbers",
     [([2, 4],), ([1, 2, 3, 4],), ([5],)]),
    ("celsius_to_fahrenheit", "c", "c * 9 / 5 + 32", "convert degrees Celsius to Fahrenheit", [(100,), (0,), (-40,)]),
    ("is_prime", "n", "n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))", "check whether a number is prime",
     [(7,), (1,), (21,), (97,)]),
    ("gcd", "a, b", "a if b == 0 else gcd(b, a % b)", "find the greatest common divisor of two positive integers",
     [(12, 18), (17, 5), (100, 75)]),
    ("power", "base, exp", "base ** exp", "raise a number to a power", [(2, 10), (5, 0), (-3, 3)]),
    ("count_positive", "items", "sum(1 for x in items if x > 0)", "count the positive numbers in a list",
     [([1, -2, 3],), ([],), ([-1, 0],)]),
    ("merge_sorted", "a, b", "sorted(a + b)", "merge two lists into one sorted list",
     [([1, 4], [2, 3]), ([], [5]), ([9, 1], [1])]),
    ("char_frequency", "s", "{c: s.count(c) for c in s}", "count each character of a string, in a dict",
     [("abca",), ("",), ("zz",)]),
    ("is_anagram", "a, b", "sorted(a) == sorted(b)", "check whether two words are anagrams",
     [("listen", "silent"), ("abc", "abd"), ("", "")]),
    ("flatten", "lists", "[x for sub in lists for x in sub]", "flatten a list of lists",
     [([[1, 2], [3]],), ([],), ([[], ["a"]],)]),
    ("index_of", "items, value", "items.index(value) if value in items else -1",
     "return the index of a value in a list, or -1 when it is absent", [([4, 5, 6], 5), ([1], 9), ([], 0)]),
    ("swap", "a, b", "(b, a)", "swap two values, returning them as a tuple", [(1, 2), ("x", "y"), (0, 0)]),
    ("repeat_string", "s, n", "s * n", "repeat a string n times", [("ab", 3), ("x", 0), ("hi", 1)]),
    ("min_max", "items", "(min(items), max(items))", "return the smallest and largest number of a list as a tuple",
     [([3, 1, 2],), ([5],), ([-2, 8, 0],)]),
    ("longest_word", "s", "max(s.split(), key=len)", "find the longest word in a sentence (the first one on a tie)",
     [("the quick brown fox",), ("a bb cc",), ("word",)]),
]
HELD_OUT = 10  # of the 40 tasks, for evaluation; the other 30 train


def task_row(task_id: int, name: str, params: str, body: str, task: str, cases: list[tuple]) -> dict:
    """One MBPP-format row; the expected values come from running our own reference solution here."""
    code = f"def {name}({params}):\n    return {body}\n"
    scope: dict = {}
    exec(code, scope)  # the kit's own reference solution, not model output
    tests = [f"assert {name}({', '.join(map(repr, args))}) == {scope[name](*args)!r}" for args in cases]
    return {"task_id": task_id, "prompt": f"Write a function to {task}.", "code": code.strip(),
            "test_imports": [], "test_list": tests}


def write_sample(path: Path, split: str) -> None:
    """30 train or 10 test tasks in MBPP's "sanitized" format; the split is fixed, the two disjoint."""
    rows = [task_row(i, *spec) for i, spec in enumerate(_TASKS, 1)]
    random.Random("code-sample-split").shuffle(rows)
    chosen = rows[:HELD_OUT] if split == "test" else rows[HELD_OUT:]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in chosen))


# --- sample completions for `python -m kit rewards check code` (the hidden tests of `add`) ---

_HIDDEN = ["assert add(-4, 4) == 0", "assert add(10, 25) == 35", "assert add(0, 7) == 7"]


def _sample(label: str, completion: str) -> dict:
    return {"label": label, "completion": [{"role": "assistant", "content": completion}], "tests": _HIDDEN}


SAMPLE_COMPLETIONS = [
    _sample("right, in a block", "```python\ndef add(a, b):\n    return a + b\n```"),
    _sample("right, bare code", "def add(a, b):\n    return a + b"),
    _sample("passes some tests", "```python\ndef add(a, b):\n    return abs(a) + b\n```"),
    _sample("returns the shown value", "```python\ndef add(a, b):\n    return 5\n```"),
    _sample("exits before the tests", "```python\nimport sys\nsys.exit(0)\n```"),
    _sample("equal to everything", "```python\nclass Any:\n    def __eq__(self, other):\n        return True\n\n"
                                   "def add(a, b):\n    return Any()\n```"),
    _sample("not Python", "```python\nfunction add(a, b) { return a + b; }\n```"),
    _sample("a JavaScript block", "```javascript\nfunction add(a, b) { return a + b; }\n```"),
    _sample("prose", "You add the two numbers and return the result."),
]
