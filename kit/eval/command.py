"""`python -m kit eval`: score a model (and its base, or a baseline) on held-out prompts, outside a run.

Settings the user leaves out come from the training run the model belongs to (OUT/run.yaml beside
OUT/merged or OUT/adapter): its eval or training data, and its completion length.
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

from kit import cpu_threads
from kit.checks.model_rewards import prepare_model_rewards
from kit.config import SAMPLE_DATA, DataConfig
from kit.config.judging import JudgeConfig
from kit.data import load_rows
from kit.data.held_out import HeldOutRecord, count_trained, trained_prompts
from kit.digest import file_sha256
from kit.errors import KitError
from kit.eval.evaluate import EvalResult, compare, evaluate, format_table, write_json
from kit.models.generate import Sampling
from kit.models.inference import Loaded, is_adapters_base, load_for_inference
from kit.outputs import RunDir, eval_file_name, run_file_beside
from kit.recipe import Recipe
from kit.rewards.code import prepare_code_rewards
from kit.tools.budget import ToolBudget

DEFAULT_COMPLETION_TOKENS = 256  # when neither the run nor the recipe says


def run_context(model_path: str | None, adapter: str | None) -> dict:
    """The training run a model came from (OUT/run.yaml beside OUT/merged or OUT/adapter), if any."""
    import yaml

    for candidate in (adapter, model_path):
        if candidate and run_file_beside(candidate).is_file():
            return yaml.safe_load(run_file_beside(candidate).read_text()) or {}
    return {}


def run_folder(model_path: str | None, adapter: str | None) -> RunDir | None:
    """OUT, when the model scored is a run's OUT/merged or OUT/adapter (run.yaml beside it)."""
    for candidate in (adapter, model_path):
        if candidate and run_file_beside(candidate).is_file():
            return RunDir(Path(candidate).parent)
    return None


def rows_to_score(recipe: Recipe, run: dict, out: RunDir | None, data: str | None, split: str, n: int):
    """(rows, how many of them the run trained on, where they come from, in words).

    Without --data, a run's model is scored on that run's held-out data: the rows it held out of its training file
    (OUT/held_out.json), else its eval.path, else the recipe's test split. Rows the run trained on are counted
    wherever they come from the run's own training data (same file or hub split), and said in the table."""
    record = HeldOutRecord.read(out.held_out) if out and data is None else None
    settings = prompt_settings(run)
    if record:
        everything = load_rows(recipe, record.data_config(settings.get("max_prompt_length", 512)))
        rows = record.select(everything, out.held_out)
        rows = rows.select(range(min(n, len(rows))))
        return rows, 0, f"{record.source}: the run's held-out rows ({out.held_out}), never trained on"
    data = data or (run.get("eval") or {}).get("path") or (run.get("data") or {}).get("path")
    rows = load_rows(recipe, DataConfig(path=data, split=split, limit=n, **settings))
    trained = run_training_prompts(recipe, run, out, data, split)
    trained_on = count_trained(rows, trained) if trained else 0
    source = data or "the recipe's own data (its hub dataset, or rows it makes)"
    return rows, trained_on, f"{source} ({split})"


def run_training_prompts(recipe: Recipe, run: dict, out: RunDir | None, data: str | None, split: str) -> set[str]:
    """The prompts the run trained on (less those it held out) when `data` and `split` are its training data;
    else an empty set."""
    trained = run.get("data") or {}
    local_file = data not in (None, SAMPLE_DATA)  # a recipe reads a local file whole, whatever the split
    if not run or not same_source(data, trained.get("path")) or \
            (not local_file and split != trained.get("split", "train")):
        return set()
    rows = load_rows(recipe, DataConfig(**{k: v for k, v in trained.items() if k in DataConfig.model_fields}))
    return trained_prompts(rows, HeldOutRecord.read(out.held_out) if out else None)


def same_source(a: str | None, b: str | None) -> bool:
    """Two data settings name the same data: the same hub dataset (None), or the same local file."""
    if a is None or b is None or SAMPLE_DATA in (a, b):
        return a == b
    return Path(a).resolve() == Path(b).resolve() or (
        Path(a).is_file() and Path(b).is_file() and file_sha256(a) == file_sha256(b))


def prompt_settings(run: dict) -> dict:
    """The run's own prompt settings: the model was trained (and the run evaluated it) with its system prompt."""
    data = run.get("data") or {}
    return {key: data[key] for key in ("system_prompt", "max_prompt_length") if data.get(key) is not None}


def tool_setting(run: dict, recipe: Recipe, name: str):
    """A `grpo` tool setting (rounds of calls, the budget): the run's, else the recipe's, else the kit's default."""
    from kit.config.sections import GRPOSection

    for grpo in (run.get("grpo") or {}, recipe.defaults.get("grpo") or {}):
        if name in grpo:
            return grpo[name]
    return GRPOSection.model_fields[name].default


def tool_budget(run: dict, recipe: Recipe) -> ToolBudget:
    return ToolBudget(tool_setting(run, recipe, "tool_calls_per_turn"),
                      tool_setting(run, recipe, "tool_seconds_per_rollout"))


def at_least_one(value: int, flag: str, meaning: str) -> None:
    """Checked before any loading: a count below 1 otherwise ends in a pydantic traceback."""
    if value < 1:
        raise KitError(f"{flag} {value}: must be 1 or more ({meaning})")


def require_folder_for(path: Path) -> None:
    """--json's folder exists and takes files: checked before minutes of evaluation, whose results would be lost."""
    folder = path.parent
    if path.is_dir():
        raise KitError(f"--json {path} is a folder; give a file name in it, e.g. {path / 'scores.json'}")
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        state = "cannot be written" if folder.is_dir() else "does not exist"
        raise KitError(f"--json {path}: the folder {folder} {state}; create it first, or choose another path")


def score_models(recipe: Recipe, rows, sampling: Sampling, model: str | None, adapter: str | None,
                 baseline: str | None, backend: str) -> list[EvalResult]:
    """The table's columns: the baseline, if any, then the model (with an adapter: its base, then base + adapter).

    A baseline that is the adapter's own base is that base column, from the same load: a second engine would ask
    for another 0.9 of the GPU's memory."""
    if baseline and is_adapters_base(baseline, model, adapter):
        print(f"eval: the baseline {baseline} is the adapter's base: one load scores it (without the adapter) "
              "and the trained model")
        return compare(recipe, rows, load_for_eval(model, adapter, sampling, backend), sampling,
                       names=("baseline", "trained"))
    results = [evaluate_baseline(baseline, recipe, rows, sampling, backend)] if baseline else []
    return results + compare(recipe, rows, load_for_eval(model, adapter, sampling, backend), sampling)


def load_for_eval(model: str | None, adapter: str | None, sampling: Sampling, backend: str) -> Loaded:
    return load_for_inference(model, adapter, backend=backend, new_tokens=sampling.max_new_tokens)


def evaluate_baseline(baseline: str, recipe: Recipe, rows, sampling: Sampling, backend: str) -> EvalResult:
    """Its own load, closed before the model's loads: two vLLM engines would not fit in one GPU's memory."""
    with closing(load_for_eval(baseline, None, sampling, backend)) as loaded:
        return evaluate(loaded.model, loaded.tokenizer, recipe, rows, sampling, "baseline")


def evaluate_command(recipe: Recipe, model: str | None, adapter: str | None, baseline: str | None, split: str,
                     n: int, data: str | None, max_new_tokens: int | None, json_path: str | None,
                     backend: str = "auto", reward_models: dict[str, str] | None = None) -> Path:
    """`reward_models`: {reward name: model} over the run's (run.yaml) and the recipe's."""
    at_least_one(n, "--n", "the number of held-out prompts to score")
    if max_new_tokens is not None:
        at_least_one(max_new_tokens, "--max-new-tokens", "the longest answer to generate, in tokens")
    if json_path:
        require_folder_for(Path(json_path))
    run = run_context(model, adapter)
    rows, trained_on, data = rows_to_score(recipe, run, run_folder(model, adapter), data, split, n)
    judge = JudgeConfig(**{**(recipe.defaults.get("judge") or {}), **(run.get("judge") or {})})  # the run's judge
    models = {**(recipe.defaults.get("reward_models") or {}), **(run.get("reward_models") or {}),
              **(reward_models or {})}  # the recipe's, the run's, then --reward-model
    prepare_model_rewards(recipe.rewards.funcs, judge, models)
    # the code recipe's rewards run model code: the same isolation (or refusal) and row checks as training
    sandbox = prepare_code_rewards(run.get("code_isolation", "auto"),
                                   [*recipe.rewards.funcs, *recipe.toolbox.functions()], rows)
    if sandbox:
        print(f"eval: model code (code rewards, a Python tool) runs in the sandbox: {sandbox}")
    tokens = max_new_tokens or (run.get("grpo") or {}).get("max_completion_length") or \
        recipe.defaults.get("grpo", {}).get("max_completion_length", DEFAULT_COMPLETION_TOKENS)
    template_options = (run.get("grpo") or {}).get("chat_template_kwargs") or {}  # the run's, e.g. enable_thinking
    sampling = Sampling(max_new_tokens=tokens, chat_template_kwargs=template_options,
                        max_tool_rounds=tool_setting(run, recipe, "max_tool_calling_iterations"),
                        tool_budget=tool_budget(run, recipe))
    cpu_threads.start(run.get("cpu_threads", "auto"))
    print(f"eval: {len(rows)} prompts from {data}, up to {tokens} new tokens, greedy")
    results = score_models(recipe, rows, sampling, model, adapter, baseline, backend)
    for result in results:
        result.trained_on = trained_on
    print(format_table(results))
    source = Path(adapter or model or ".")
    name = eval_file_name(source, split)
    path = Path(json_path) if json_path else (source.parent / name if source.is_dir() else Path(name))
    write_json(path, results, recipe=recipe.name, split=split, max_new_tokens=tokens)
    print(f"eval: results in {path}")
    return path
