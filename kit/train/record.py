"""OUT/run.yaml: the run's settings as it really trained, loadable again, and what it trained with.

    python -m kit train --config OUT/run.yaml          # the same run again, into a new folder

The settings part is the resolved config, with what a rerun from elsewhere needs spelled out: every reward by name
with the weight it trained with (0 for one the run dropped), and the recipe file and data files as absolute paths.
After it, sections that record rather than set (kit.outputs.RUN_RECORDS; reading the file back drops them):
`inputs`, the recipe and data files with their sha256 (a user's recipe file is also copied into OUT/recipe/);
`versions`; and, once known, what the trainer held, GPU memory, CPU threads, adaptive rewards' end weights and
`timing` (each stage's estimated time against what it took: kit.monitor.finish_time).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import yaml

from kit.config import SAMPLE_DATA, RunConfig
from kit.digest import file_sha256
from kit.env import package_versions
from kit.outputs import RunDir, write_run_section
from kit.rewards.adaptive import AdaptiveWeight
from kit.rewards.bundle import RewardBundle
from kit.rewards.traits import trait


def write_run_file(out: RunDir, cfg: RunConfig, recipe_rewards: RewardBundle | None = None) -> None:
    """run.yaml as the run starts: its settings, then `inputs` and `versions` (a user's recipe copied beside)."""
    record = settings_record(cfg, recipe_rewards)
    record["output_dir"] = str(out)
    text = yaml.safe_dump(record, sort_keys=False)
    text += "# what this run used; ignored when the file is read back as a config\n"
    inputs = inputs_record(cfg, out)
    sources = reward_sources(recipe_rewards) if recipe_rewards is not None else {}
    if sources:  # a reward model's or a judge's model: the weights alone do not say what paid
        inputs["reward_models"] = sources
    text += yaml.safe_dump({"inputs": inputs, "versions": package_versions()}, sort_keys=False)
    out.run_file.write_text(text)


def settings_record(cfg: RunConfig, recipe_rewards: RewardBundle | None) -> dict:
    record = cfg.model_dump(mode="json")
    if recipe_rewards is not None:  # every reward, so the record does not lean on the recipe's defaults
        record["rewards"] = {r.name: cfg.rewards.get(r.name, r.weight) for r in recipe_rewards.rewards}
    source = recipe_file(cfg.recipe)
    if source is not None and is_file_spec(cfg.recipe):
        record["recipe"] = str(source)
    for section in ("data", "eval"):
        path = record[section].get("path")
        if path not in (None, SAMPLE_DATA):
            record[section]["path"] = str(Path(path).resolve())
    for name, model in record["reward_models"].items():  # a folder, wherever run.yaml is read from later
        if Path(model).expanduser().is_dir():
            record["reward_models"][name] = str(Path(model).expanduser().resolve())
    return record


def reward_sources(rewards: RewardBundle) -> dict:
    """Each model-scored reward's `source` trait (kit.rewards.traits): its model, endpoint, rubric; no secrets."""
    return {r.name: source for r in rewards.rewards if (source := trait(r.fn, "source"))}


def inputs_record(cfg: RunConfig, out: RunDir) -> dict:
    """The files the run read, with their sha256; a recipe outside the kit is copied into OUT/recipe/."""
    inputs = {}
    source = recipe_file(cfg.recipe)
    if source is not None:
        inputs["recipe"] = {"path": str(source), "sha256": file_sha256(source)}
        if not is_shipped(source):
            copy = out.recipe_copy / source.name
            copy.parent.mkdir(exist_ok=True)
            shutil.copy2(source, copy)
            inputs["recipe"]["copy"] = str(copy)
    for name, path in (("data", cfg.data.path), ("eval_data", cfg.eval.path)):
        if path not in (None, SAMPLE_DATA) and Path(path).is_file():
            inputs[name] = {"path": str(Path(path).resolve()), "sha256": file_sha256(path)}
    return inputs


def is_file_spec(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec  # as kit.recipes.load_recipe tells a file from a module


def recipe_file(spec: str) -> Path | None:
    """The file a recipe spec names: the .py file itself, or the module's source (a shipped recipe's too)."""
    if is_file_spec(spec):
        return Path(spec).resolve()
    import kit.recipes

    name = spec if "." in spec else f"{kit.recipes.__name__}.{spec}"
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return Path(found.origin).resolve() if found and found.origin else None


def is_shipped(source: Path) -> bool:
    import kit

    return Path(kit.__file__).resolve().parent in source.parents


def record_adaptive_weights(out: RunDir, rewards: RewardBundle) -> None:
    """Adaptive rewards' weights at the start and the end of training (weight x the final multiplier)."""
    adaptive = {r.name: {"start": r.weight, "end": round(r.weight * r.fn.multiplier, 6)}
                for r in rewards.rewards if isinstance(r.fn, AdaptiveWeight)}
    if adaptive:
        write_run_section(out.run_file, "adaptive_weights", adaptive)


def changed_inputs(run_file: Path) -> list[str]:
    """For a rerun from a run.yaml: the files it names whose contents are not what that run read."""
    recorded = (yaml.safe_load(run_file.read_text()) or {}).get("inputs") or {}
    notes = []
    for name, entry in recorded.items():
        if "path" not in entry:  # reward_models: no file of its own
            continue
        path = Path(entry["path"])
        if not path.is_file():
            notes.append(f"{name} file {path} is gone")
        elif file_sha256(path) != entry["sha256"]:
            copy = f" (the run's copy: {entry['copy']})" if entry.get("copy") else ""
            notes.append(f"{name} file {path} changed since that run{copy}")
    return notes
