"""Issue 17: every bad input ends in exactly one `error:` line, a non-zero exit, no traceback, and OUT
left as it was. One row per bad input: what to set up, the command, a fragment of the error line.

The kit runs in-process (kit.cli.main) on the tiny model. Rows whose fault shows only once training
runs (a reward that fails on real completions, a full disk) are marked slow; their OUT is the run's
own new folder, which must hold no merged model and nothing half-written.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kit.cli import main

SMOKE = ["--profile", "smoke", "--out", "{out}"]

# A user recipe whose one reward misbehaves as KIND says ("ok": it behaves). Empty completions (the
# kit's trial call before training) get a good value unless the fault is one no completion excuses.
REWARD_RECIPE = """
import math
from datasets import Dataset
from kit.rewards import RewardBundle

KIND = {kind!r}

def digits(completions, **kwargs):
    texts = [c[-1]["content"] for c in completions]
    real = any(texts)  # the trial call before training passes empty completions
    if KIND == "raises":
        raise KeyError("answer")
    if KIND == "wrong_count":
        return [0.0]
    if KIND == "no_list":
        return None
    if KIND == "raises_on_text" and real:
        return [1 / 0 if t else 0.0 for t in texts]
    if KIND == "all_none" and real:
        return [None for t in texts]
    return [sum(ch.isdigit() for ch in t) / 10 for t in texts]

def prepare(split, source):
    return Dataset.from_list([{{"prompt": [{{"role": "user", "content": f"Count to {{i}}"}}]}} for i in range(32)])

REWARDS = RewardBundle((digits, 1.0))
"""


@dataclass
class Case:
    name: str
    argv: list[str]  # {tmp}, {out}, {model} are filled in
    expected: str  # a fragment of the single error line
    setup: Callable[[Path, pytest.MonkeyPatch], None] = lambda tmp, monkeypatch: None
    runs: bool = False  # fails mid-run: OUT is the run's new folder (no merged model, nothing partial)
    marks: list = field(default_factory=list)


def write(name: str, content: str | bytes) -> Callable:
    def setup(tmp: Path, monkeypatch) -> None:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return setup


def reward_recipe(kind: str) -> Callable:
    return write("recipe.py", REWARD_RECIPE.format(kind=kind))


def closed_stdin(tmp: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)  # what Python sets when the process starts with fd 0 closed


def existing_gguf(tmp: Path, monkeypatch) -> None:
    write("run/merged/config.json", "{}")(tmp, monkeypatch)
    write("out/run.Q8_0.gguf", b"a GGUF someone already uses")(tmp, monkeypatch)


def full_disk(module: str, attribute: str, owner: str | None = None) -> Callable:
    """Writing through `module[.owner].attribute` fails as on a full disk (what came before it stays written)."""
    def setup(tmp: Path, monkeypatch) -> None:
        import importlib

        def no_space(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        target = importlib.import_module(module)
        monkeypatch.setattr(getattr(target, owner) if owner else target, attribute, no_space)
    return setup


def recipe_and(second: Callable) -> Callable:
    """A well-behaved reward recipe, and `second`."""
    def setup(tmp: Path, monkeypatch) -> None:
        reward_recipe("ok")(tmp, monkeypatch)
        second(tmp, monkeypatch)
    return setup


def interrupted_export(tmp: Path, monkeypatch) -> None:
    """Ctrl-C while the converter runs: the staging folder must go, and nothing reach OUT."""
    from kit.export.gguf import export

    write("run/merged/config.json", "{}")(tmp, monkeypatch)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(export, "make_files", ctrl_c)


GSM8K_ROWS = '{"question": "What is 2+2?", "answer": "#### 4"}\n{"question": "What is 3+3?", "answer": "It is six"}\n'

CASES = [
    Case("gsm8k answer without ####", ["train", "gsm8k", "--data", "{tmp}/gsm.jsonl", *SMOKE],
         "gsm.jsonl, row 1: 'answer' has no final answer (got 'It is six'); end it with '#### <number>'",
         write("gsm.jsonl", GSM8K_ROWS)),
    Case("recipe with a syntax error", ["train", "{tmp}/recipe.py", *SMOKE],
         "syntax error in {tmp}/recipe.py, line 1: '(' was never closed",
         write("recipe.py", "def prepare(split, source:\n    pass\n")),
    Case("data file not UTF-8", ["train", "gsm8k", "--data", "{tmp}/latin1.jsonl", *SMOKE],
         "latin1.jsonl, line 2: byte 0xe9 (file offset 59) is not UTF-8; save the file as UTF-8",
         write("latin1.jsonl", b'{"question": "What is 2+2?", "answer": "#### 4"}\n{"q": "caf\xe9"}\n')),
    Case("reward raises", ["train", "{tmp}/recipe.py", *SMOKE],
         "reward 'digits' raised KeyError: 'answer' on completion 0", reward_recipe("raises")),
    Case("reward returns the wrong number of values", ["train", "{tmp}/recipe.py", *SMOKE],
         "reward 'digits' returned 1 values for 2 completions", reward_recipe("wrong_count")),
    Case("reward returns None instead of a list", ["train", "{tmp}/recipe.py", *SMOKE],
         "reward 'digits' returned NoneType instead of a list", reward_recipe("no_list")),
    Case("MODEL an empty folder", ["train", "gsm8k", "--model", "{tmp}/empty", *SMOKE],
         "model folder {tmp}/empty is empty, no config.json", lambda tmp, mp: (tmp / "empty").mkdir()),
    Case("OUT an existing file", ["train", "gsm8k", "--profile", "smoke", "--out", "{tmp}/taken"],
         "output folder {tmp}/taken is a file", write("taken", "notes")),
    Case("OUT a read-only place", ["train", "gsm8k", "--profile", "smoke", "--out", "/proc/kit-out"],
         "output folder /proc/kit-out cannot be written: creating a folder in /proc failed"),
    Case("eval --n 0", ["eval", "gsm8k", "--model", "{model}", "--n", "0"], "--n 0: must be 1 or more"),
    Case("eval --n -5", ["eval", "gsm8k", "--model", "{model}", "--n", "-5"], "--n -5: must be 1 or more"),
    Case("chat with stdin closed", ["chat", "{model}"], "chat reads your messages from stdin, which is closed",
         closed_stdin),
    Case("export over an existing GGUF", ["export", "{tmp}/run/merged", "--quant", "q8_0", "--out", "{out}"],
         "{out}/run.Q8_0.gguf already exists; pass --overwrite to replace it", existing_gguf),
    Case("recipe that raises at import", ["train", "{tmp}/recipe.py", *SMOKE],
         "recipe '{tmp}/recipe.py' raised RuntimeError while it was imported ({tmp}/recipe.py, line 2): no GPU "
         "here; fix the recipe", write("recipe.py", "import os\nraise RuntimeError('no GPU here')\n")),
    Case("rewards check of a recipe that raises at import", ["rewards", "check", "{tmp}/recipe.py"],
         "raised ValueError while it was imported", write("recipe.py", "x = int('seven')\n")),
    Case("recipe whose prepare returns a list", ["train", "{tmp}/recipe.py", *SMOKE],
         "prepare() returned list, not a datasets.Dataset; return Dataset.from_list(rows)",
         write("recipe.py", REWARD_RECIPE.format(kind="ok").replace("return Dataset.from_list(", "return list("))),
    Case("eval --json into a missing folder", ["eval", "gsm8k", "--model", "{model}", "--data", "sample", "--json",
                                                 "{tmp}/no/such/dir/e.json"],
         "--json {tmp}/no/such/dir/e.json: the folder {tmp}/no/such/dir does not exist; create it first"),
    Case("eval --split the sample does not have", ["eval", "gsm8k", "--model", "{model}", "--data", "sample",
                                                   "--split", "nope"],
         "the sample data has the splits train and test, not 'nope'"),
    Case("push to a name that is no repository", ["push", "{tmp}", "--repo", "not a repo"],
         "'not a repo' is not a hub repository name; write it as your-name/model-name",
         lambda tmp, monkeypatch: monkeypatch.setenv("HF_TOKEN", "hf_test")),
    Case("plan for a GPU of 0GB", ["plan", "gsm8k", "--gpu", "0GB"], "GPU size '0GB' must be more than 0"),
    Case("chat --max-new-tokens -1", ["chat", "{model}", "--max-new-tokens", "-1"],
         "--max-new-tokens -1: must be 1 or more"),
    Case("chat --temperature -1", ["chat", "{model}", "--temperature", "-1"],
         "--temperature -1.0: must be 0 (greedy) or more"),
    Case("a config file whose grpo section is not a mapping", ["train", "digit_sum", "--config", "{tmp}/c.yaml",
                                                               *SMOKE, "grpo.max_steps=1"],
         "config file {tmp}/c.yaml: grpo must be a mapping of settings", write("c.yaml", "grpo: 5\n")),
    Case("a learning rate of inf", ["train", "gsm8k", *SMOKE, "grpo.learning_rate=.inf"],
         "grpo.learning_rate: Input should be a finite number"),
    Case("a temperature of inf", ["train", "gsm8k", *SMOKE, "grpo.temperature=.inf"],
         "grpo.temperature: Input should be a finite number"),
    Case("a beta of nan", ["train", "gsm8k", *SMOKE, "grpo.beta=.nan"], "grpo.beta: Input should be a finite number"),
    Case("an absurd max_seq_length", ["train", "gsm8k", *SMOKE, "model.max_seq_length=99999999999999999999"],
         "model.max_seq_length: Input should be less than or equal to 1048576"),
    Case("OUT inside the kit's own package", ["train", "gsm8k", "--profile", "smoke", "--out",
                                             str(Path(__file__).resolve().parents[2] / "kit" / "sandbox" / "run")],
         "is inside the kit's own kit package; choose an OUT outside it"),
    Case("no prompt short enough", ["train", "gsm8k", *SMOKE, "data.max_prompt_length=4"], "data.max_prompt_length"),
    Case("Ctrl-C during kit export", ["export", "{tmp}/run/merged", "--quant", "q8_0", "--out", "{out}"],
         "interrupted (Ctrl-C) during kit export; no GGUF file is left half-written", interrupted_export),
    Case("a learning rate that overflows the weights", ["train", "gsm8k", *SMOKE, "eval.n=0",
                                                        "grpo.learning_rate=1e30"],
         "Lower grpo.learning_rate (now 1e+30)", runs=True, marks=[pytest.mark.slow]),
    Case("reward raises on real completions", ["train", "{tmp}/recipe.py", *SMOKE, "eval.n=0",
                                               "grpo.learnability_check=false"],  # so GRPO's own step meets it
         "reward 'digits' raised ZeroDivisionError: division by zero on completion 0 of a batch ('",
         reward_recipe("raises_on_text"), runs=True, marks=[pytest.mark.slow]),
    Case("reward raises in the learnability check", ["train", "{tmp}/recipe.py", *SMOKE, "eval.n=0"],
         "reward 'digits' raised ZeroDivisionError: division by zero on completion 0 of a batch in the learnability "
         "check ('", reward_recipe("raises_on_text"), runs=True, marks=[pytest.mark.slow]),
    Case("reward returns None for a whole batch", ["train", "{tmp}/recipe.py", *SMOKE, "eval.n=0"],
         "reward 'digits' returned None (or NaN) for all 4 completions of a batch", reward_recipe("all_none"),
         runs=True, marks=[pytest.mark.slow]),
    Case("full disk while saving a checkpoint", ["train", "{tmp}/recipe.py", *SMOKE, "eval.n=0"],
         "the disk is full: writing a checkpoint to {out}/checkpoints failed (",
         recipe_and(full_disk("transformers", "_save_rng_state", owner="Trainer")),
         runs=True, marks=[pytest.mark.slow]),
    Case("full disk while merging", ["train", "{tmp}/recipe.py", *SMOKE, "eval.n=0"],
         "the disk is full: writing the merged model to {out}/merged failed (",
         recipe_and(full_disk("kit.export.lora_merge", "save_file")),
         runs=True, marks=[pytest.mark.slow]),
]


def state(path: Path) -> dict:
    """What is at `path`: each file's bytes, each folder's presence."""
    if not path.exists():
        return {}
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else "dir" for p in path.rglob("*")}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_bad_input_ends_in_one_error_line(case, tmp_path, tiny_model, monkeypatch, capsys):
    out = tmp_path / "out"

    def fill(text: str) -> str:
        return text.format(tmp=tmp_path, out=out, model=tiny_model)

    case.setup(tmp_path, monkeypatch)
    taken = Path(fill(case.argv[case.argv.index("--out") + 1])) if "--out" in case.argv else out
    before = state(taken)

    code = main([fill(arg) for arg in case.argv])

    captured = capsys.readouterr()
    errors = [line for line in (captured.out + captured.err).splitlines() if line.startswith("error:")]
    assert code != 0
    assert len(errors) == 1, errors
    text = captured.out + captured.err
    assert fill(case.expected) in text[text.index(errors[0]):], errors[0]
    assert "Traceback" not in captured.err
    if case.runs:  # the run's own folder: stopped before merging, nothing half-written left behind
        assert not (taken / "merged").exists()
        assert not list(taken.glob(".*partial*")), "a temporary folder was left behind"
        assert all((c / "trainer_state.json").exists() for c in taken.glob("checkpoints/checkpoint-*"))
    else:
        assert state(taken) == before


def test_smoke_banner_names_a_data_file(capsys):
    from kit.config import resolve_config
    from kit.recipes import load_recipe
    from kit.train.summary import announce

    recipe = load_recipe("gsm8k")
    for data, said in [("sample", "and the recipe's sample data"), ("my.jsonl", "and data from my.jsonl"),
                       (None, "and the recipe's own data (its prepare() with no file)")]:
        cfg = resolve_config(recipe.defaults, {}, {"profile": "smoke", "data": {"path": data}}, gpu=False)
        announce(cfg, recipe, Path("out"))
        assert said in capsys.readouterr().out


@pytest.mark.parametrize("settings, reason", [
    ({"eval": {"n": 0}}, "not run: eval.n = 0"),
    ({"data": {"path": "my.jsonl"}, "eval": {"n": 200, "holdout": 0}},
     "not run: training data is the local file my.jsonl, eval.path is not set and eval.holdout is 0"),
])
def test_report_says_why_evaluation_did_not_run(tmp_path, settings, reason):
    import yaml

    from kit.monitor.report import write_report

    (tmp_path / "run.yaml").write_text(yaml.safe_dump({"data": {"path": None}, "eval": {"n": 200}, **settings}))
    assert reason in write_report(tmp_path, {}, None).read_text()


def test_smoke_banner_gives_a_real_run_command_that_works_for_a_recipe_file(capsys):
    from kit.config import resolve_config
    from kit.recipes import load_recipe
    from kit.train.summary import announce

    recipe = load_recipe("gsm8k")
    cfg = resolve_config(recipe.defaults, {}, {"profile": "smoke", "recipe": "./my task.py",
                                               "data": {"path": "my.jsonl"}}, gpu=False)
    announce(cfg, recipe, Path("out"))
    assert "make train RECIPE='./my task.py' PROFILE=full DATA=my.jsonl" in capsys.readouterr().out
