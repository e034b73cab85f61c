"""Calls into a recipe's own code (prepare, write_sample, sft_target, its rewards, its import): what it raises
becomes one `error:` line naming the function, the file and line it failed at, and the row it failed on.

    rows = call_user(recipe.prepare, split, source, label="prepare()", context=lambda: f" reading {source}")
    # error: prepare() raised KeyError: 'answer' reading q.jsonl, at my_recipe.py, line 22; run with -v for the ...

With -v the CLI prints the exception's traceback above that line (`UserCodeError.__cause__`). The kit's own
errors (KitError) and Ctrl-C pass through as they are, and only the call itself is guarded: a bug in the kit
around it keeps its traceback.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

import kit
from kit.errors import KitError, first_line
from kit.verbosity import verbose

KIT_DIR = Path(kit.__file__).resolve().parent


class UserCodeError(KitError):
    """A recipe's function raised; its exception is the `__cause__`, whose traceback -v shows."""


def call_user(fn, /, *args, label: str, context=None):
    """fn(*args); an exception it raises becomes a UserCodeError. `context()` says what it was doing (" on row 3
    (...)"), asked only when it failed: a call per row stays as cheap as the call."""
    try:
        return fn(*args)
    except KitError:
        raise  # said on purpose, by the kit's helpers or the recipe
    except Exception as err:  # noqa: BLE001  (user code may raise anything; it becomes one line)
        raise user_error(fn, err, label, context() if context else "") from err


def user_error(fn, err: BaseException, label: str, context: str = "", hint: str = "") -> UserCodeError:
    """`label` raised `err` (doing `context`), at the line of `fn`'s file it failed at; then `hint`, if any."""
    return UserCodeError(f"{label} raised {described(err)}{context}{location(fn, err)}"
                         f"{f'; {hint}' if hint else ''}; {traceback_hint()}")


def traceback_hint() -> str:
    return "its traceback is above" if verbose() else "run with -v for the traceback"


def described(err: BaseException) -> str:
    """`Type: message`, the message's first line; with the cause a library wrapped (datasets does) after it."""
    text = type(err).__name__ + (f": {message}" if (message := first_line(err, 200)) else "")
    cause = err.__cause__
    if cause is not None and not isinstance(cause, KitError):
        text += f" ({type(cause).__name__}{f': {first_line(cause, 200)}' if first_line(cause) else ''})"
    return text


def location(fn, err: BaseException) -> str:
    """", at FILE, line N": the last line of `fn`'s file in the traceback (the user's line, not the library's it
    called); the file is a shipped recipe's module name. Empty where the function's file is unknown."""
    filename = source_file(fn)
    if filename is None:
        return ""
    lines = [line for frame, line in traceback.walk_tb(err.__traceback__) if frame.f_code.co_filename == filename]
    return f", at {shown_file(filename)}{f', line {lines[-1]}' if lines else ''}"


def source_file(fn) -> str | None:
    """The file `fn` was written in, through the kit's wrappers (`.fn`), functools' (`__wrapped__`, `.func`)."""
    for _ in range(8):
        inner = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None) or getattr(fn, "fn", None)
        if not callable(inner):
            break
        fn = inner
    code = getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)  # a callable object
    return code.co_filename if code is not None else None


def shown_file(filename: str) -> str:
    """A file of the kit as its module (kit.recipes.gsm8k); another relative to the working folder when inside it."""
    path = Path(filename)
    if KIT_DIR in path.parents:
        return ".".join(path.relative_to(KIT_DIR.parent).with_suffix("").parts)
    here = os.getcwd() + os.sep
    return filename.removeprefix(here) if filename.startswith(here) else filename


def preview(row: dict, width: int = 100) -> str:
    """A row in a few words: its columns but the prompt (the prompt's last message when it has no other)."""
    items = [(k, v) for k, v in row.items() if k != "prompt"]
    prompt = row.get("prompt")
    if not items and isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        items = [("prompt", prompt[-1].get("content"))]
    text = ", ".join(f"{key}={short(value)}" for key, value in items)
    return text if len(text) <= width else text[: width - 1] + "…"


def short(value, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def print_traceback(err: BaseException) -> None:
    """With -v, the traceback of what a recipe's code raised (the CLI calls this before the error line)."""
    if verbose() and isinstance(err, UserCodeError) and err.__cause__ is not None:
        traceback.print_exception(err.__cause__)
