"""The settings reference: every setting documented in the schema, the README's table exactly what the schema
renders today, and `kit train --help` listing every setting."""

import os
import re
import subprocess
import sys

import pytest
from pydantic import BaseModel, Field

from kit.cli.parser import build_parser
from kit.config import ModelConfig, RunConfig, Section
from kit.config.reference import (
    BEGIN,
    END,
    current_block,
    groups,
    is_section,
    markdown,
    replace_block,
    shown,
    text,
)
from kit.errors import KitError
from tests.conftest import REPO

README = REPO / "docs" / "settings.md"  # the settings page
REGENERATE = "python -m kit.config.reference --write docs/settings.md"


def sections(root: type[BaseModel] = RunConfig) -> list[type[BaseModel]]:
    return [root, *(f.annotation for f in root.model_fields.values() if is_section(f.annotation))]


def undocumented(root: type[BaseModel] = RunConfig) -> list[str]:
    """Settings without a description, and sections without a docstring (a section's docstring is its help)."""
    missing = [section.__name__ for section in sections(root) if not (section.__doc__ or "").strip()]
    for section in sections(root):
        missing += [f"{section.__name__}.{name}" for name, field in section.model_fields.items()
                    if not is_section(field.annotation) and not (field.description or "").strip()]
    return missing


def setting_names(root: type[BaseModel] = RunConfig) -> list[str]:
    return [s.name for group in groups(root) for s in group.settings]


def test_every_setting_has_a_description():
    assert undocumented() == []


def test_the_description_check_sees_a_setting_without_one():
    class Bare(Section):
        """A section."""

        documented: int = Field(1, description="has help")
        silent: int = 2
        blank: str = Field("x", description="  ")

    class Root(Section):
        seed: int = Field(1, description="a seed")
        bare: Bare = Field(default_factory=Bare)

    assert undocumented(Root) == ["Root", "Bare.silent", "Bare.blank"]


def test_every_field_of_every_section_is_in_the_reference():
    expected = [f"{prefix}{name}" for prefix, section in [("", RunConfig)] + [
        (f"{key}.", f.annotation) for key, f in RunConfig.model_fields.items() if is_section(f.annotation)]
        for name, field in section.model_fields.items() if not is_section(field.annotation)]
    assert sorted(setting_names()) == sorted(expected)
    assert {"model.dtype", "grpo.learning_rate", "launch.launcher", "code_isolation"} <= set(setting_names())


def test_each_section_says_which_module_reads_it():
    for group in groups():
        assert re.search(r"\(read by [^)]*kit\.\w", group.about), f"{group.name}: say which module reads it"


def test_the_readme_table_is_what_the_schema_renders():
    assert current_block(README.read_text()) == markdown(), f"docs/settings.md's settings drifted: run {REGENERATE}"


def test_the_readme_check_fails_when_the_readme_is_edited_by_hand():
    readme = README.read_text()
    edited = readme.replace("| `model.dtype` |", "| `model.dtipe` |")
    assert edited != readme
    assert current_block(edited) != markdown()


def test_a_changed_schema_renders_a_different_table():
    class Drifted(ModelConfig):
        """What to load and how (read by kit.models.loader)."""

        dtype: str = Field("auto", description="a description that is not the README's")

    class DriftedRun(RunConfig):
        model: Drifted = Field(default_factory=Drifted)

    assert markdown(DriftedRun) != markdown()
    assert "a description that is not the README's" in markdown(DriftedRun)
    assert current_block(README.read_text()) != markdown(DriftedRun)


def test_writing_the_block_again_changes_nothing_and_keeps_the_prose():
    readme = README.read_text()
    assert replace_block(readme, markdown()) == readme
    replaced = replace_block(readme, f"{BEGIN}\nnew\n{END}")
    assert replaced.startswith(readme[:readme.index(BEGIN)])
    assert replaced.endswith(readme[readme.index(END) + len(END):])


def test_a_document_without_the_markers_is_refused():
    with pytest.raises(KitError, match="no generated settings block"):
        current_block("# a README without the markers\n")


def test_the_table_shows_defaults_and_choices():
    table = markdown()
    assert "| `model.dtype` | `auto` |" in table
    assert "(one of: `auto`, `bfloat16`, `float16`, `float32`)" in table
    assert "| `save.formats` | `[lora, merged_16bit]` |" in table
    assert "| `grpo.learning_rate` | `5e-6` |" in table
    cpu_threads = next(line for line in table.splitlines() if line.startswith("| `cpu_threads`"))
    assert "one of" not in cpu_threads  # "auto" or a number: not a choice among the Literal's values alone


def test_defaults_are_shown_as_yaml_writes_them():
    assert [shown(v) for v in (None, True, 5e-6, 0.1, ["a", "b"], {"k": False}, "x")] == [
        "null", "true", "5e-6", "0.1", "[a, b]", "{k: false}", "x"]


def test_a_table_cell_cannot_end_early():
    class Piped(Section):
        """A section (read by kit.nothing)."""

        choice: str = Field("a", description="a | b")

    class Root(Section):
        """Root (read by kit.nothing)."""

        piped: Piped = Field(default_factory=Piped)

    assert "| `piped.choice` | `a` | a \\| b |" in markdown(Root)


def test_the_terminal_text_is_wrapped_and_plain():
    lines = text(width=60).splitlines()
    assert max(len(line) for line in lines if " " in line.strip()) <= 60  # a lone long token may not be split
    assert not any("`" in line for line in lines)


@pytest.mark.parametrize("command", ["train", "plan"])
def test_help_lists_every_setting(command):
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    listed = {line.split("=", 1)[0].strip() for line in sub.format_help().splitlines() if line.startswith("  ")}
    assert set(setting_names()) <= listed


def test_kit_train_help_lists_every_setting_as_a_user_sees_it():
    result = subprocess.run([sys.executable, "-m", "kit", "train", "--help"], cwd=REPO, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    missing = [name for name in setting_names() if f"  {name}=" not in result.stdout]
    assert missing == []
