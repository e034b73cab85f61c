"""Shared fixtures (an isolated kit cache, the tiny model built once per test session) and the two test loops:

    pytest            the developer's loop: every test but the slow ones (about 4 minutes)
    pytest --all      every test (make test, CI): tests/e2e and each test marked slow too

A test is slow when it takes seconds: all of tests/e2e (the real CLI in subprocesses), and the ones marked
@pytest.mark.slow. A slow test named by its file or node id (pytest tests/e2e/test_train.py) runs without --all.

`make test` runs the tests in two pytest-xdist workers (-n 2), files with slow tests first so that the last files
to finish are short ones, then the tests marked @pytest.mark.serial alone in pytest's own process; in a worker
those are skipped, saying why.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from kit.models.before_unsloth import before_unsloth

before_unsloth()  # tests import Unsloth directly too: its vLLM probe, and its dropping of the compile cache's folder
pytest_plugins = ("tests.hang_guard",)  # a test past pyproject's `timeout` fails alone; see there

REPO = Path(__file__).resolve().parent.parent
IN_A_WORKER = "PYTEST_XDIST_WORKER" in os.environ  # pytest-xdist sets it in each worker it starts
E2E = REPO / "tests" / "e2e"


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", help="also run the slow tests (tests/e2e and @pytest.mark.slow)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("serial") and IN_A_WORKER:
            item.add_marker(pytest.mark.skip(reason="serial: it needs pytest's own process; run it without -n "
                                                    "(make test runs these after the others)"))
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: each file keeps its own order
    if config.getoption("--all") or config.option.markexpr:  # -m chooses for itself
        return
    named = {Path(arg.split("::")[0]).resolve() for arg in config.args if Path(arg.split("::")[0]).is_file()}
    left_out = [item for item in items if item.get_closest_marker("slow") and item.path not in named]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = set(left_out)
        items[:] = [item for item in items if item not in dropped]
        config.stash[LEFT_OUT] = len(left_out)


def pytest_terminal_summary(terminalreporter, config):
    if config.stash.get(LEFT_OUT, 0):
        terminalreporter.write_line(f"{config.stash[LEFT_OUT]} slow tests were left out: pytest --all (make test, "
                                    "CI) runs every test")


LEFT_OUT = pytest.StashKey[int]()


@pytest.fixture(scope="session", autouse=True)
def kit_cache(tmp_path_factory) -> Path:
    """Every test run builds into its own cache, never the user's ~/.cache/grpo-kit. pytest-xdist's workers share
    the run's: each model is built once (kit.atomic.build_locked: one process builds, the others wait), not once a
    worker; on a 2-core AVX2 machine a build of the offline SmolLM2 alone takes minutes."""
    base = tmp_path_factory.getbasetemp()
    path = (base.parent if IN_A_WORKER else base) / "kit-cache"  # a worker's base is popen-gwN inside the run's
    path.mkdir(exist_ok=True)
    os.environ["KIT_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model(kit_cache) -> Path:
    from kit.models.tiny import tiny_model_path

    return tiny_model_path()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def chat(text: str) -> list[dict]:
    """A completion as TRL hands it over for conversational datasets."""
    return [{"role": "assistant", "content": text}]


# A user recipe written as a file: its reward varies between completions (so GRPO's gradients are
# non-zero) and it ships no sample data and no sft_target.
COUNT_RECIPE = textwrap.dedent(
    """
    from datasets import Dataset
    from kit.rewards import RewardBundle

    def digits(completions, **kwargs):
        return [sum(ch.isdigit() for ch in c[-1]["content"]) / 10 for c in completions]

    def prepare(split, source):
        return Dataset.from_list([{"prompt": [{"role": "user", "content": f"Count to {i}"}]} for i in range(32)])

    REWARDS = RewardBundle((digits, 1.0))
    """
)


@pytest.fixture
def tool_tokenizer(tiny_model):
    """A fresh tiny tokenizer with the kit's tool template (the session's shared one stays as built)."""
    from transformers import AutoTokenizer

    from kit.tools.template import use_tool_template

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    use_tool_template(tokenizer, "kit:tiny-llama")
    return tokenizer
