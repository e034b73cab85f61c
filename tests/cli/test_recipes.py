"""`kit recipes` (kit/cli/recipes.py): the shipped recipes a line each, and a copy that trains as it is."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kit.cli import main
from kit.cli.recipes import describe, write_new
from kit.errors import KitError
from kit.outputs import RunDir
from kit.recipes import known_recipes, load_recipe
from tests.conftest import REPO


def test_every_shipped_recipe_has_its_line(capsys):
    assert main(["recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["recipe", "data"]
    for name in known_recipes():
        assert any(line.split()[0] == name for line in lines[1:]), name


def test_a_line_says_the_data_and_what_the_recipe_brings():
    """Read from the recipe: its HUB_ID (python_tool's is gsm8k's), else its DATA, and its contract's parts."""
    gsm8k, python_tool, csv_qa = describe("gsm8k"), describe("python_tool"), describe("csv_qa")
    assert gsm8k.data == "hub openai/gsm8k" and gsm8k.sft and gsm8k.samples and not gsm8k.tools
    assert gsm8k.purpose.startswith("GSM8K grade-school math")
    assert python_tool.tools and python_tool.data == "hub openai/gsm8k"
    assert csv_qa.data == "your file (a sample ships)" and describe("addition").data == "generated: 400 pairs"
    assert not describe("concise_helpful").sft


def test_the_copy_is_the_recipe_and_loads_as_a_file(tmp_path, capsys):
    target = tmp_path / "my_task.py"
    assert main(["recipes", "copy", "digit_sum", str(target)]) == 0
    assert "python -m kit train" in capsys.readouterr().out
    shipped, copied = load_recipe("digit_sum"), load_recipe(str(target))
    assert [r.name for r in copied.rewards.rewards] == [r.name for r in shipped.rewards.rewards]
    assert copied.defaults == shipped.defaults
    assert (REPO / "kit/recipes/digit_sum.py").read_text() in target.read_text()


@pytest.mark.parametrize("argv, said", [
    (["recipes", "copy", "digit_sum", "{tmp}/taken.py"], "exists"),
    (["recipes", "copy", "digit_sum", "{tmp}/my_task.txt"], "ending in .py"),
    (["recipes", "copy", "digit_sum", "{tmp}/no_folder/my_task.py"], "is not a folder"),
    (["recipes", "copy", "no_such_recipe", "{tmp}/my_task.py"], "no shipped recipe named 'no_such_recipe'"),
])
def test_a_copy_that_cannot_be_made_is_one_line_and_writes_nothing(argv, said, tmp_path, capsys):
    (tmp_path / "taken.py").write_text("mine\n")
    assert main([arg.format(tmp=tmp_path) for arg in argv]) == 2
    assert said in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.py"]
    assert (tmp_path / "taken.py").read_text() == "mine\n"


def test_a_file_that_appears_meanwhile_is_kept(tmp_path):
    target = tmp_path / "my_task.py"
    target.write_text("theirs\n")
    with pytest.raises(KitError, match="exists"):
        write_new(target, "ours\n")
    assert target.read_text() == "theirs\n" and [p.name for p in tmp_path.iterdir()] == ["my_task.py"]


@pytest.mark.slow  # a smoke run of the copy: ~40 s
def test_the_copy_trains_as_it_is(tmp_path):
    kit = [sys.executable, "-m", "kit"]
    copied = subprocess.run([*kit, "recipes", "copy", "digit_sum", "my_task.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert copied.returncode == 0, copied.stderr[-2000:]
    run = subprocess.run([*kit, "train", "./my_task.py", "--profile", "smoke", "--out", "run", "grpo.max_steps=2",
                          "eval.n=2"], cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert RunDir(tmp_path / "run").adapter.is_dir()
