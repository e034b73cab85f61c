"""What a user of the GRPO guide sees when their recipe's code fails, through the real command line: one `error:`
line naming the function, its file and line (and the row), exit 2, no traceback; with -v, the traceback too.
The recipe and data are the guide's own (tests/e2e/guide/, as /tmp/guide/ had them); the in-process checks of each
message are tests/test_user_code.py.
"""

from pathlib import Path

import pytest

from tests.e2e.cli import kit

GUIDE = Path(__file__).parent / "guide"
TRAIN = ["--profile", "smoke", "grpo.max_steps=2", "eval.n=0"]


def guide_recipe(tmp_path: Path, old: str = "", new: str = "") -> Path:
    text = (GUIDE / "my_recipe.py").read_text()
    assert old in text, old
    path = tmp_path / "my_recipe.py"
    path.write_text(text.replace(old, new) if old else text)
    return path


def line_of(path: Path, fragment: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if fragment in line)


def one_error_line(result) -> str:
    """The run's single `error:` line; exit 2 and no traceback."""
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert len(errors) == 1, errors
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return errors[0]


def test_prepare_on_a_file_without_the_answer_column_is_one_line_and_v_shows_where(tmp_path, tiny_model):
    recipe = guide_recipe(tmp_path)
    data = tmp_path / "questions.jsonl"
    data.write_text('{"question": "Sam has 2 apples and buys 9 more. How many apples now?"}\n')
    argv = ["train", recipe, "--data", data, "--out", tmp_path / "out", *TRAIN]

    failed_at = line_of(recipe, '"answer": x["answer"]')
    line = one_error_line(kit(*argv))
    assert line == (f"error: prepare() raised KeyError: 'answer' reading {data} (split 'train'), at {recipe}, line "
                    f"{failed_at}; run with -v for the traceback")

    verbose = kit(*argv, "-v")
    assert verbose.returncode == 2
    traceback = verbose.stderr[verbose.stderr.index("Traceback"):]
    assert f'File "{recipe}", line' in traceback and "KeyError: 'answer'" in traceback
    assert traceback.rstrip().splitlines()[-1].endswith("; its traceback is above")


@pytest.mark.parametrize("recipe", ["guide", "gsm8k"])
def test_an_empty_data_file_is_said_to_be_empty(recipe, tmp_path):  # refused before any model is loaded
    data = tmp_path / "empty.jsonl"
    data.write_text("")
    spec = guide_recipe(tmp_path) if recipe == "guide" else recipe
    line = one_error_line(kit("train", spec, "--data", data, "--out", tmp_path / "out", *TRAIN))
    assert line == f"error: data.path: data file {data} is empty; give a file with at least one row"


def test_a_reward_that_raises_while_training_names_its_file_line_and_row(tmp_path, tiny_model):
    # empty completions (the trial before training) pass; the first real one does not
    recipe = guide_recipe(tmp_path, "    return [2.0 if ans == gt else 0.0 for ans, gt in zip(extracted, answer)]",
                          "    return [float(r.split()[0]) if r.strip() else 0.0 for r in responses]")
    line = one_error_line(kit("train", recipe, "--data", GUIDE / "arith.jsonl", "--out", tmp_path / "out", *TRAIN))
    assert line.startswith("error: reward 'correctness_reward' raised ValueError: could not convert string to float")
    assert " on completion " in line and " for the row with question='Sam has " in line and ", answer=" in line
    assert line.endswith(f", at {recipe}, line {line_of(recipe, 'float(r.split()')}; a reward must return a number or "
                         "None for any text the model writes; run with -v for the traceback")


def test_sft_target_that_raises_names_the_row(tmp_path, tiny_model):
    recipe = guide_recipe(tmp_path, "{row['answer']}", "{row['solution']}")
    line = one_error_line(kit("train", recipe, "--data", GUIDE / "arith.jsonl", "--out", tmp_path / "out", *TRAIN,
                              "stages=[sft,grpo]", "sft.max_steps=1"))
    assert line == ("error: sft_target() raised KeyError: 'solution' on row 0 of the training rows (question='Sam has "
                    f"13 apples and buys 14 more. Ho…, answer=27), at {recipe}, line {line_of(recipe, 'solution')}; "
                    "run with -v for the traceback")


def test_a_recipe_with_a_syntax_error_is_one_line_and_v_shows_it(tmp_path):
    recipe = guide_recipe(tmp_path, "def prepare(split, source):", "def prepare(split, source:")
    argv = ["train", recipe, "--out", tmp_path / "out", *TRAIN]
    line = one_error_line(kit(*argv))
    assert line == (f"error: recipe '{recipe}': syntax error in {recipe}, line {line_of(recipe, 'def prepare')}: '(' "
                    "was never closed; fix that line; run with -v for the traceback")
    verbose = kit(*argv, "-v")
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr and "SyntaxError" in verbose.stderr
