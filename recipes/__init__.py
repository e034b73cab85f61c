"""The recipes the kit ships, one module per task, and how a run finds its recipe.

    load_recipe("gsm8k")           # a module here: recipes/gsm8k.py, imported as kit.recipes.gsm8k
    load_recipe("mypkg.task")      # any importable module
    load_recipe("./my_task.py")    # a file

Each module is a dataset preparer + a reward bundle + the settings it needs; kit/recipe.py is the contract.
`python -m kit recipes` lists them; `python -m kit recipes copy gsm8k my_task.py` starts a new one
(kit/cli/recipes.py).

They live at the top of the repository, one module per task; kit/recipes is a link to this folder, so that they
install inside the kit (`pip install .` puts them in kit/recipes/) and no top-level `recipes` package, which would
collide with torchtune's or a user's own, lands in site-packages (tests/test_packaging.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from kit.errors import KitError, first_line
from kit.recipe import USER_MODULE_PREFIX, Recipe, recipe_from_module
from kit.user_code import UserCodeError, traceback_hint


def known_recipes() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def load_recipe(spec: str, check_tools: bool = True) -> Recipe:
    """Find a recipe by name (`gsm8k`), dotted module path (`mypkg.task`) or file (`./task.py`).

    check_tools=False leaves the tools' check (it imports transformers) to the caller: recipe.toolbox.check()."""
    module = _import_recipe_module(spec)
    return recipe_from_module(module, spec, check_tools)


def _import_recipe_module(spec: str) -> ModuleType:
    if spec.endswith(".py") or "/" in spec:
        return _import_file(spec)
    if "." not in spec and spec in known_recipes():
        with _syntax_errors_named(spec):
            return importlib.import_module(f"{__name__}.{spec}")
    if "." in spec:
        try:
            with _syntax_errors_named(spec):
                return importlib.import_module(spec)
        except ModuleNotFoundError as err:
            if err.name and spec.startswith(err.name):
                raise KitError(f"cannot import recipe module '{spec}' ({err})") from None
            raise
    raise KitError(
        f"unknown recipe '{spec}'; choose from: {', '.join(known_recipes())} "
        "(or give a dotted module path, or a path to a .py file)"
    )


def _import_file(spec: str) -> ModuleType:
    path = Path(spec)
    if not path.is_file():
        raise KitError(f"recipe file {spec} does not exist")
    module_name = f"{USER_MODULE_PREFIX}{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    with _syntax_errors_named(spec):
        loader_spec.loader.exec_module(module)
    return module


@contextmanager
def _syntax_errors_named(spec: str):
    """A recipe (or a module it imports) that does not parse, or raises while it is imported: its file, line and
    Python's complaint, in one line (kit.user_code); -v shows the traceback."""
    try:
        yield
    except SyntaxError as err:
        raise UserCodeError(f"recipe '{spec}': syntax error in {err.filename}, line {err.lineno}: {err.msg}; fix "
                            f"that line; {traceback_hint()}") from err
    except KitError:
        raise  # said already
    except ModuleNotFoundError as err:
        if err.name and (spec == err.name or spec.startswith(f"{err.name}.")):
            raise  # the recipe's own module (or its package) is not there: the caller says so
        raise _import_error(spec, err, "install the package that provides it into the kit's environment, or "
                            "fix the import") from err
    except Exception as err:  # the recipe's own code failed while it was imported
        raise _import_error(spec, err, "fix the recipe") from err


def _import_error(spec: str, err: Exception, fix: str) -> UserCodeError:
    """The line of the recipe's own file it failed at: the last frame in the file of the first module frame (the
    recipe's top level), rather than in a library it called."""
    frames = [frame for frame in traceback.extract_tb(err.__traceback__) if not frame.filename.startswith("<")]
    top = next((frame for frame in frames if frame.name == "<module>"), None)
    own = [frame for frame in frames if top is not None and frame.filename == top.filename] or frames[-1:]
    where = f" ({own[-1].filename}, line {own[-1].lineno})" if own else ""
    return UserCodeError(f"recipe '{spec}' raised {type(err).__name__} while it was imported{where}: "
                         f"{first_line(err)}; {fix}; {traceback_hint()}")
