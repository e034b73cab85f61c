"""torch.compile's on-disk cache, one folder per CPU feature set.

Inductor keys its cached graphs on CPU without the vector instructions they were generated for: a graph
compiled where AVX2 was picked (8 floats per vector) is reused where AVX-512 is (16), its loops stepping by 8
over vectors of 16, and the stores at the end of each row run past the tensor. Seen here as "double free or
corruption" aborts in Unsloth's compiled GRPO loss, when a disk under /tmp moved between an AVX2 machine and
an AVX-512 one (CI; a cloud VM; nodes of a cluster sharing one cache folder). A folder per feature set keeps
each machine's kernels to itself. A folder the user chose (TORCHINDUCTOR_CACHE_DIR) is theirs, left alone.

Unsloth drops TORCHINDUCTOR_CACHE_DIR (unsloth_zoo.patching_utils.patch_torch_compile) whenever its model modules
are first imported, which on a CPU can be long after `import unsloth` (`unsloth.models.vision`, say), and torch then
falls back to its shared default folder. So before importing Unsloth the kit also moves that fallback
(`hold_torch_to_it`): with the variable dropped, torch still uses this CPU's folder, or the one the user chose.
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import os
import platform
import re
import tempfile
from pathlib import Path

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"  # read by inductor at every cache access, so setting it before use is enough
CPUINFO = Path("/proc/cpuinfo")


def cpu_features(cpuinfo: str) -> str:
    """The feature flags of the first processor listed (x86 "flags", Arm "Features"), in a stable order."""
    match = re.search(r"^(?:flags|Features)\s*:(.*)$", cpuinfo, re.MULTILINE)
    return " ".join(sorted(match.group(1).split())) if match else ""


def folder_name(cpuinfo: str, machine: str, capability: str = "") -> str:
    """`x86_64-3fa2b1c09d4e`: the architecture, then a digest of the feature flags and of ATEN_CPU_CAPABILITY,
    which narrows the instructions inductor picks (avx2 on an AVX-512 machine)."""
    digest = hashlib.sha256(f"{cpu_features(cpuinfo)}|{capability}".encode()).hexdigest()[:12]
    return f"{machine or 'cpu'}-{digest}"


def default_root() -> Path:
    """Inductor's own default folder (torch._inductor.runtime.cache_dir_utils), without importing torch."""
    try:
        user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
    except (KeyError, OSError):  # a container user without a passwd entry
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    return Path(tempfile.gettempdir()) / f"torchinductor_{user}"


def separate_per_cpu(environ=os.environ) -> str | None:
    """Point inductor at this CPU's folder unless the user chose one; returns the folder set, or None."""
    chosen = environ.get(CACHE_ENV)
    if chosen and Path(chosen) != default_root():  # torch writes its default back once it has used it: not a choice
        return None
    environ[CACHE_ENV] = folder = this_cpus_folder(environ.get("ATEN_CPU_CAPABILITY", ""))
    return folder


def hold_torch_to_it(environ=os.environ) -> str:
    """Once torch may be imported: the folder torch falls back to when TORCHINDUCTOR_CACHE_DIR is unset becomes the
    one chosen here (the user's, else this CPU's), so Unsloth's dropping the variable no longer moves the cache."""
    from torch._inductor.runtime import cache_dir_utils, runtime_utils

    separate_per_cpu(environ)
    folder = environ[CACHE_ENV]
    cache_dir_utils.default_cache_dir = runtime_utils.default_cache_dir = lambda: folder  # cache_dir() calls it
    return folder


@functools.cache  # read once: set at the kit's import and again before Unsloth's
def this_cpus_folder(capability: str) -> str:
    try:
        cpuinfo = CPUINFO.read_text(errors="replace")
    except OSError:  # not Linux: the architecture alone
        cpuinfo = ""
    return str(default_root() / folder_name(cpuinfo, platform.machine(), capability))
