"""A recipe's own code that raises (prepare, write_sample, sft_target, a reward, its import) ends in one line naming
the function, its file and line, and the row; the kit's own errors and Ctrl-C pass through; an empty data file is
said to be empty, whichever recipe reads it. The CLI's side (exit 2, no traceback, -v) is tests/e2e/test_user_code.py.
"""

from pathlib import Path

import pytest

from kit.checks.empty_completions import try_on_empty_completions
from kit.config import DataConfig
from kit.data import load_rows
from kit.errors import KitError
from kit.recipes import load_recipe
from kit.rewards.guard import CheckedReward
from kit.user_code import UserCodeError, call_user, print_traceback
from tests.conftest import chat

GUIDE = Path(__file__).parent / "e2e" / "guide"


def guide_recipe(tmp_path: Path, *edits: tuple[str, str]) -> tuple[str, object]:
    """The guide's recipe (tests/e2e/guide/my_recipe.py) with `edits` (old, new) made, as a file in tmp_path."""
    text = (GUIDE / "my_recipe.py").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "my_recipe.py"
    path.write_text(text)
    return str(path), load_recipe(str(path))


def line_of(path: str, fragment: str) -> int:
    return next(n for n, line in enumerate(Path(path).read_text().splitlines(), 1) if fragment in line)


def test_prepare_on_a_file_without_a_column_names_the_line_and_the_file_it_read(tmp_path):
    path, recipe = guide_recipe(tmp_path)
    data = tmp_path / "questions.jsonl"
    data.write_text('{"question": "Sam has 2 apples and buys 9 more. How many apples now?"}\n')
    with pytest.raises(UserCodeError) as caught:
        load_rows(recipe, DataConfig(path=str(data)))
    line = line_of(path, '"answer": x["answer"]')
    assert str(caught.value) == (f"prepare() raised KeyError: 'answer' reading {data} (split 'train'), at {path}, "
                                 f"line {line}; run with -v for the traceback")
    assert isinstance(caught.value.__cause__, KeyError)  # what -v shows


@pytest.mark.parametrize("content", ["", "\n\n"])
@pytest.mark.parametrize("recipe_name", ["guide", "gsm8k"])
def test_an_empty_data_file_is_said_to_be_empty_whichever_recipe_reads_it(recipe_name, content, tmp_path):
    recipe = guide_recipe(tmp_path)[1] if recipe_name == "guide" else load_recipe("gsm8k")
    data = tmp_path / "empty.jsonl"
    data.write_text(content)
    with pytest.raises(KitError, match=f"^data file {data} is empty; give a file with at least one row$"):
        load_rows(recipe, DataConfig(path=str(data)))


def test_a_file_datasets_cannot_read_says_why_even_when_datasets_does_not(tmp_path, monkeypatch):
    import datasets

    from kit.data import load_table

    def silent(*args, **kwargs):
        raise StopIteration  # what datasets raises for an empty JSONL: no message at all

    monkeypatch.setattr(datasets, "load_dataset", silent)
    data = tmp_path / "rows.jsonl"
    data.write_text('{"question": "q"}\n')
    with pytest.raises(KitError, match=f"^cannot read data file {data} as json: StopIteration$"):
        load_table(str(data), "", "train")


def test_write_sample_that_raises_is_named(tmp_path):
    from kit.data.rows import sample_path

    path, recipe = guide_recipe(tmp_path, ("def sft_target(row):", "def write_sample(path, split):\n"
                                           "    raise OSError('no sample here')\n\n\ndef sft_target(row):"))
    with pytest.raises(UserCodeError, match=rf"^write_sample\(\) raised OSError: no sample here writing the sample "
                       rf"data of split 'train', at {path}, line \d+; run with -v"):
        sample_path(recipe, "train")


def test_sft_target_that_raises_names_the_row_it_failed_on(tmp_path):
    from datasets import Dataset

    from kit.train.stages.sft import sft_dataset

    path, recipe = guide_recipe(tmp_path, ("{row['answer']}", "{int(row['answer'])}"))
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "q"}], "answer": a} for a in ("1", "2", "three")])
    with pytest.raises(UserCodeError) as caught:
        sft_dataset(recipe, rows)
    assert str(caught.value) == (
        "sft_target() raised ValueError: invalid literal for int() with base 10: 'three' on row 2 of the training rows "
        f"(answer='three'), at {path}, line {line_of(path, 'def sft_target') + 1}; run with -v for the traceback")


def test_a_reward_that_raises_names_its_file_line_and_row(tmp_path):
    path, recipe = guide_recipe(tmp_path, ("2.0 if ans == gt", "2.0 if int(ans) == gt"))
    reward = CheckedReward(recipe.rewards.funcs[0])
    completions = [chat("<answer>4</answer>"), chat("<answer>four</answer>")]
    with pytest.raises(UserCodeError) as caught:
        reward(completions, prompts=[[], []], answer=[4, 5], completion_ids=[[], []])
    line = line_of(path, "int(ans) == gt")
    assert str(caught.value) == (
        "reward 'correctness_reward' raised ValueError: invalid literal for int() with base 10: 'four' on completion 1 "
        f"of a batch ('<answer>four</answer>') for the row with answer=5, at {path}, line {line}; a reward must "
        "return a number or None for any text the model writes; run with -v for the traceback")


def test_the_trial_before_training_names_the_row_it_tried(tmp_path):
    from datasets import Dataset

    path, recipe = guide_recipe(tmp_path, ("2.0 if ans == gt", "2.0 if ans == gt['value']"))
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "q"}], "answer": 4}])
    with pytest.raises(UserCodeError, match=rf"^reward 'correctness_reward' raised TypeError: 'int' object is not "
                       rf"subscriptable on completion 0 of a batch of empty completions tried before training "
                       rf"\(''\) for the row with answer=4, at {path}, line \d+; a reward must"):
        try_on_empty_completions(recipe.rewards.funcs, rows)


def test_the_kits_own_errors_and_ctrl_c_pass_through_unchanged():
    said = KitError("the sandbox cannot run here; set code_isolation")

    def refuses(completions, **kwargs):
        raise said

    with pytest.raises(KitError) as caught:
        CheckedReward(refuses)([chat("x")])
    assert caught.value is said
    for raised in (said, KeyboardInterrupt()):
        def stops(raised=raised):
            raise raised
        with pytest.raises(type(raised)) as caught:
            call_user(stops, label="prepare()")
        assert caught.value is raised


def test_a_shipped_function_is_named_by_its_module():
    from kit.data.tables import require_utf8

    with pytest.raises(UserCodeError, match=r"^prepare\(\) raised FileNotFoundError: .* at kit\.data\.tables, line "):
        call_user(require_utf8, Path("/no/such/file.jsonl"), label="prepare()")


def test_with_v_the_line_says_the_traceback_is_above_and_it_is(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KIT_VERBOSE", "1")
    path, recipe = guide_recipe(tmp_path, ("def sft_target(row):\n", "def sft_target(row):\n    return 1 / 0\n"))
    with pytest.raises(UserCodeError, match="; its traceback is above$") as caught:
        call_user(recipe.sft_target, {}, label="sft_target()")
    print_traceback(caught.value)
    shown = capsys.readouterr().err
    assert shown.startswith("Traceback") and f'File "{path}", line' in shown and "ZeroDivisionError" in shown


@pytest.mark.parametrize("source, said", [
    ("def prepare(split, source:\n    pass\n", "syntax error in {path}, line 1: '(' was never closed; fix that line; "
     "run with -v for the traceback"),
    ("import os\nimport not_a_module_anywhere\n", "raised ModuleNotFoundError while it was imported ({path}, line 2): "
     "No module named 'not_a_module_anywhere'; install the package"),
    # the recipe's own line, not the json module's where the exception began
    ("import json\n\nSETTINGS = json.loads('{')\n", "raised JSONDecodeError while it was imported ({path}, line 3)"),
])
def test_a_recipe_that_fails_to_import_is_one_line_with_its_file_and_line(source, said, tmp_path):
    path = tmp_path / "my_recipe.py"
    path.write_text(source)
    with pytest.raises(UserCodeError) as caught:
        load_recipe(str(path))
    assert said.format(path=path) in str(caught.value)
    assert caught.value.__cause__ is not None  # what -v shows
