"""The docs' guide-style recipe (docs/recipes.md), run as printed: its data, its recipe file and its commands, in a
fresh folder.

What a new user who followed the guide ran into, each checked here: `kit eval` scores exactly the rows the run held
out; run.yaml records every reward and reruns the same run; the guide's curriculum trains as stages; a numeric gold
column is caught before training.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kit.data.held_out import HeldOutRecord
from kit.monitor.metrics import read_metrics
from tests.conftest import REPO
from tests.e2e.cli import HANG_GUARD_S

SECTION = "### A recipe in the guide's style"


def readme_blocks() -> dict[str, str]:
    """The section's code blocks: the data maker, the recipe file, the commands."""
    text = (REPO / "docs" / "recipes.md").read_text()  # the Recipes page
    section = text[text.index(SECTION):]
    section = section[:section.index("\n**gsm8k**")]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    assert [kind for kind, _ in blocks] == ["bash", "python", "bash"]
    return {"data": blocks[0][1], "recipe": blocks[1][1], "commands": blocks[2][1]}


def run_bash(script: str, folder: Path) -> subprocess.CompletedProcess:
    """`python` is this interpreter, as in an activated .venv."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-e", "-c", script], cwd=folder, env=env, capture_output=True, text=True,
                           timeout=HANG_GUARD_S, check=False)


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    """A folder where the README's section was followed to the letter."""
    folder = tmp_path_factory.mktemp("readme")
    blocks = readme_blocks()
    assert run_bash(blocks["data"], folder).returncode == 0
    (folder / "my_recipe.py").write_text(blocks["recipe"])
    result = run_bash(blocks["commands"], folder)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return folder, result.stdout


def test_the_gold_answer_check_passes_the_printed_recipe(followed):
    _, stdout = followed
    assert "gold answers: correctness_reward pays the recipe's worked answer on 8 of 8 training rows" in stdout


def test_eval_scores_exactly_the_rows_the_run_held_out(followed):
    folder, stdout = followed
    out = folder / "outputs" / "arith"
    record = HeldOutRecord.read(out / "held_out.json")
    assert record.source == str(folder / "arith.jsonl") and len(record.rows) == 16  # smoke: eval.n 16 of 20
    assert "the run's held-out rows (outputs/arith/held_out.json), never trained on" in stdout
    scored = json.loads((out / "eval-merged-test.json").read_text())["results"][0]
    assert scored["n"] == len(record.rows) and scored["trained_on"] == 0
    lines = (folder / "arith.jsonl").read_text().splitlines()
    held_questions = {json.loads(lines[i])["question"] for i in record.rows}
    assert {s["prompt"] for s in scored["samples"]} <= held_questions


def test_eval_on_the_training_file_says_it_was_trained_on(followed):
    folder, _ = followed
    result = run_bash("python -m kit eval ./my_recipe.py --model outputs/arith/merged --data arith.jsonl --n 40",
                      folder)
    assert result.returncode == 0, result.stderr[-3000:]
    held = set(HeldOutRecord.read(folder / "outputs" / "arith" / "held_out.json").rows)
    # the README's data is random, unseeded: a held-out question can also be a training row's, and was trained on
    questions = [json.loads(line)["question"] for line in (folder / "arith.jsonl").read_text().splitlines()]
    trained_questions = {q for i, q in enumerate(questions) if i not in held}
    trained = sum(q in trained_questions for q in questions[:40])
    assert f"WARNING: {trained} of these 40 prompts were TRAINED ON" in result.stdout


def test_the_curriculum_trains_its_stages_in_order_with_their_own_rewards(followed):
    folder, _ = followed
    out = folder / "outputs" / "arith"
    steps = [(m["stage"], m["step"]) for m in read_metrics(out / "metrics.jsonl") if "reward" in m]
    assert steps == [("format", s) for s in range(1, 21)] + [("grpo-2", 1), ("grpo-2", 2)]
    logged = {m["stage"]: set(m) for m in read_metrics(out / "metrics.jsonl") if "reward" in m}
    assert "rewards/correctness_reward/mean" not in logged["format"]  # weight 0 in that stage: dropped
    assert "rewards/correctness_reward/mean" in logged["grpo-2"]
    names = [r["name"] for r in json.loads((out / "eval.json").read_text())["results"]]
    assert names == ["before", "after sft", "after format", "after grpo-2"]


def test_run_yaml_records_the_rewards_and_inputs_and_reruns_the_same_run(followed):
    folder, _ = followed
    first, again = folder / "outputs" / "arith", folder / "outputs" / "arith-again"
    record = yaml.safe_load((first / "run.yaml").read_text())
    assert record["rewards"] == {"correctness_reward": 1.0, "format_reward": 1.0}
    assert record["recipe"] == str(folder / "my_recipe.py") and record["data"]["path"] == str(folder / "arith.jsonl")
    assert (first / "recipe" / "my_recipe.py").read_text() == (folder / "my_recipe.py").read_text()
    data = record["inputs"]["data"]
    assert data["path"] == str(folder / "arith.jsonl") and len(data["sha256"]) == 64

    def settings(out):
        text = (out / "run.yaml").read_text()
        return {k: v for k, v in yaml.safe_load(text[:text.index("# what this run used")]).items() if k != "output_dir"}

    assert settings(again) == settings(first)
    assert (again / "held_out.json").read_text() == (first / "held_out.json").read_text()
    losses = [[(m["stage"], m["step"], m.get("loss")) for m in read_metrics(out / "metrics.jsonl")]
              for out in (first, again)]
    assert losses[0] == losses[1]


def test_a_numeric_gold_column_is_refused_before_training(followed, tmp_path):
    folder, _ = followed
    recipe = (folder / "my_recipe.py").read_text()
    cast = '    rows = rows.cast_column("answer", Value("string"))'
    assert cast in recipe
    (tmp_path / "my_recipe.py").write_text(recipe.replace(cast + "  #", "    #"))
    (tmp_path / "arith.jsonl").write_text((folder / "arith.jsonl").read_text())
    checked = run_bash("python -m kit rewards check ./my_recipe.py --data arith.jsonl", tmp_path)
    trained = run_bash("python -m kit train ./my_recipe.py --data arith.jsonl --out run", tmp_path)
    for result in (checked, trained):
        assert "column 'answer' is int64 while the completions are text" in result.stdout + result.stderr
    assert checked.returncode == 1 and trained.returncode == 2 and not (tmp_path / "run").exists()
