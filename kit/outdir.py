"""Checks on the output folder (OUT) made before a run writes anything there.

A file in OUT's place or a folder the user cannot write to otherwise fails only when the run first
writes, after the model has loaded, with an OSError traceback.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kit.errors import KitError


def require_writable_folder(out: Path) -> None:
    """OUT must be a folder (or not exist yet) in a place where this process can create files."""
    if out.exists() and not out.is_dir():
        raise KitError(f"output folder {out} is a file; choose another OUT (a folder path)")
    base = nearest_existing(out)
    if not base.is_dir():
        raise KitError(f"output folder {out} cannot be made: {base} is a file; choose another OUT")
    try:  # a real probe: permissions, read-only mounts and quotas all show here, as root too
        os.rmdir(tempfile.mkdtemp(prefix=".kit-probe-", dir=base))
    except OSError as err:
        raise KitError(f"output folder {out} cannot be written: creating a folder in {base} failed "
                       f"({err.strerror}); choose an OUT in a folder you can write to") from None


def nearest_existing(path: Path) -> Path:
    """`path` itself if it exists, else its closest existing parent (where OUT would be created)."""
    path = Path(os.path.abspath(path))
    while not path.exists():
        path = path.parent
    return path
