"""Reading and merging the layers (recipe, profile, YAML file, CLI overrides) into one validated RunConfig,
with every problem reported at once and a "did you mean" for a misspelt key."""

from __future__ import annotations

import copy
import difflib
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from kit.config.profiles import profile_layer, resolve_profile
from kit.config.schema import PROFILES, RunConfig
from kit.errors import KitError
from kit.outputs import RUN_RECORDS


def deep_merge(base: dict, over: dict) -> dict:
    """Merge nested dicts, `over` winning; lists and scalars are replaced, not merged."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_overrides(items: list[str]) -> dict:
    """`grpo.learning_rate=1e-5 model.target_modules=[q_proj,v_proj]` -> a nested dict."""
    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise KitError(f"cannot read override '{item}': write it as section.key=value, e.g. grpo.max_steps=50")
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw) if raw else None
    return out


def read_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise KitError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise KitError(f"config file {path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise KitError(f"config file {path} must hold a mapping of settings, not {type(data).__name__}")
    for record in RUN_RECORDS:  # what a run.yaml records after its settings; not settings
        data.pop(record, None)
    return checked_sections(data, path)


def checked_sections(data: dict, path: Path) -> dict:
    """A section written with every key commented out (`grpo:` alone) holds nothing and sets nothing; one that
    is not a mapping is refused. Either, passed on, would replace the recipe's settings for that section."""
    sections = [name for name, f in RunConfig.model_fields.items()
                if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)]
    for name in sections:
        if name in data and data[name] is None:
            del data[name]
        elif name in data and not isinstance(data[name], dict):
            raise KitError(f"config file {path}: {name} must be a mapping of settings (e.g. '{name}:' then indented "
                           f"'key: value' lines), not {type(data[name]).__name__} {data[name]!r}")
    return data


def build_config(layers: list[dict]) -> RunConfig:
    """Merge the layers (lowest first) and validate once, reporting every problem together."""
    merged: dict = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as err:
        raise KitError(format_validation_error(err, hidden_rule_errors(merged, err))) from None


def hidden_rule_errors(merged: dict, err: ValidationError) -> list[dict]:
    """The rules across fields that pydantic never reached because a field failed: checked again with the
    failing keys left out (their defaults in their place), so every problem is reported in one go."""
    if all(not e["loc"] for e in err.errors()):  # the rules themselves failed: nothing was hidden
        return []
    trimmed = copy.deepcopy(merged)
    for e in err.errors():
        _drop(trimmed, e["loc"])
    try:
        RunConfig.model_validate(trimmed)
    except ValidationError as again:
        return [e for e in again.errors() if e["type"] == "value_error"]
    return []


def _drop(tree: dict, loc: tuple) -> None:
    node = tree
    for part in loc[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and loc:
        node.pop(loc[-1], None)


def format_validation_error(err: ValidationError, more: list[dict] = ()) -> str:
    lines = []
    for e in [*err.errors(), *more]:
        key = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key{_did_you_mean(e['loc'])}")
        elif e["type"] == "value_error":
            lines.extend(f"  {msg}" for msg in e["msg"].removeprefix("Value error, ").splitlines())
        else:
            lines.append(f"  {key or '(top level)'}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join([f"the config has {len(lines)} problem(s):", *lines])


def _did_you_mean(loc: tuple) -> str:
    section: type[BaseModel] = RunConfig
    for part in loc[:-1]:
        field = section.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        section = annotation
    close = difflib.get_close_matches(str(loc[-1]), list(section.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f"; valid keys: {', '.join(section.model_fields)}"


def resolve_config(
    recipe_defaults: dict, file_layer: dict, cli_layer: dict, gpu: bool, recipe_has_sample: bool = True,
    recipe_has_tools: bool = False, recipe_shows_pictures: bool = False,
) -> RunConfig:
    """Apply the layers in order: schema defaults < recipe < profile < YAML file < CLI.

    A recipe without sample data keeps its own data source under the smoke profile; one with tools gets
    lengths that hold the tools' schemas and a few turns; one with pictures gets the tiny vision model.
    """
    requested = deep_merge(file_layer, cli_layer).get("profile", "auto")
    if requested not in PROFILES:
        raise KitError(f"profile: '{requested}' is not a profile; choose from: {', '.join(PROFILES)}")
    profile = resolve_profile(requested, gpu)
    profile_settings = profile_layer(profile, gpu, recipe_has_sample, recipe_has_tools, recipe_shows_pictures)
    return build_config([recipe_defaults, profile_settings, file_layer, cli_layer, {"profile": profile}])
