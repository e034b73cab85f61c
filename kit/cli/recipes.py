"""`kit recipes`: the shipped recipes a line each, and `kit recipes copy NAME my_task.py` to start one's own.

    python -m kit recipes                        # name, data, what it brings, what it trains
    python -m kit recipes copy gsm8k my_task.py  # an editable copy, which trains as it is:
    python -m kit train ./my_task.py --profile smoke
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kit.errors import KitError
from kit.recipes import known_recipes, load_recipe

PURPOSE_LEAST = 30  # characters of the docstring's first line shown however narrow the terminal


@dataclass(frozen=True)
class RecipeLine:
    name: str
    data: str  # "hub <id>", or the recipe's DATA
    tools: bool
    sft: bool  # an SFT warm-start target (stages: [sft, grpo])
    samples: bool  # sample completions for `kit rewards check`
    purpose: str  # the first line of the module's docstring


def describe(name: str) -> RecipeLine:
    recipe = load_recipe(name, check_tools=False)  # the tools' check imports transformers: not needed to list
    doc = (shipped_module(name).__doc__ or "").strip()
    return RecipeLine(name, recipe.data, bool(recipe.toolbox), recipe.sft_target is not None,
                      bool(recipe.sample_completions), doc.splitlines()[0] if doc else "")


def shipped_module(name: str):
    return importlib.import_module(f"kit.recipes.{name}")


def table(lines: list[RecipeLine]) -> str:
    name_width, data_width = max(len(line.name) for line in lines), max(len(line.data) for line in lines)
    rows = [f"{'recipe':<{name_width}}  {'data':<{data_width}}  tools  sft  samples  what it trains"]
    room = max(PURPOSE_LEAST, shutil.get_terminal_size().columns - len(rows[0]) + len("what it trains"))
    for line in lines:
        purpose = line.purpose if len(line.purpose) <= room else line.purpose[:room - 1] + "…"
        rows.append(f"{line.name:<{name_width}}  {line.data:<{data_width}}  {mark(line.tools):<5}  "
                    f"{mark(line.sft):<3}  {mark(line.samples):<7}  {purpose}")
    return "\n".join(rows)


def mark(flag: bool) -> str:
    return "yes" if flag else "-"


def list_recipes() -> int:
    print(table([describe(name) for name in known_recipes()]))
    print("\nsft: a worked answer per row for the warm start; samples: completions for `kit rewards check NAME`.\n"
          "Start your own from one: python -m kit recipes copy NAME my_task.py")
    return 0


def copy_recipe(name: str, destination: str) -> int:
    target = Path(destination)
    if target.suffix != ".py":
        raise KitError(f"{destination}: a recipe is a Python module; give the copy a name ending in .py "
                       "(my_task.py)")
    if name not in known_recipes():
        raise KitError(f"no shipped recipe named {name!r}; `python -m kit recipes` lists them")
    source = Path(shipped_module(name).__file__)
    write_new(target, f"# A copy of the kit's {name} recipe (recipes/{source.name}), yours to change.\n"
              f"{source.read_text()}")
    shown = target.as_posix() if target.is_absolute() or "/" in destination else f"./{target.as_posix()}"
    print(f"wrote {target}: the {name} recipe. It trains as it is:\n"
          f"  python -m kit train {shown} --profile smoke")
    return 0


def write_new(target: Path, text: str) -> None:
    """`target` appears whole or not at all, and never over a file that is there (a rename would replace it)."""
    if not target.parent.is_dir():
        raise KitError(f"{target.parent} is not a folder; create it first, or copy the recipe elsewhere")
    with tempfile.NamedTemporaryFile("w", dir=target.parent, prefix=f".{target.name}.", delete=False) as tmp:
        tmp.write(text)
    try:
        os.link(tmp.name, target)  # fails, rather than replaces, when the file appeared meanwhile
    except FileExistsError:
        raise KitError(f"{target} exists; choose another name, or delete it first") from None
    finally:
        os.unlink(tmp.name)
