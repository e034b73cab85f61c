"""A GGUF file in llama.cpp (llama-cpp-python) on any CPU: the kit's checks and the notebooks load it here.

    llm = load_gguf("out/gguf/run.Q8_0.gguf")   # a llama_cpp.Llama

On a Xeon with AMX (Sapphire Rapids and later) a natively built llama.cpp repacks the weights for the AMX tiles,
and its AMX matmul can crash the process; this loads such files on llama.cpp's ordinary CPU kernels instead.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path


def has_amx_kernels() -> bool:
    """Whether this llama.cpp build would repack weights for the CPU's AMX tiles (built natively on a Xeon
    with AMX: Sapphire Rapids and later)."""
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


@contextmanager
def plain_cpu_weights():
    """llama.cpp's AMX matmul crashes the process on some models and machines (a segfault in
    ggml_backend_amx_mul_mat on the CPU demo's q8_0 model, here; llama.cpp issue 20824, open without a fix).
    Without the extra buffer types llama.cpp keeps the weights as the file has them and runs its ordinary
    CPU kernels. llama-cpp-python's Llama has no argument for it, so its default model params are wrapped
    while one model loads."""
    import llama_cpp.llama_cpp as low_level  # the module Llama reads its defaults from

    default = low_level.llama_model_default_params

    def without_extra_buffers():
        params = default()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        low_level.llama_model_default_params = default


def load_gguf(path: str | Path, n_ctx: int = 1024, **options):
    """llama_cpp.Llama for `path` (options: Llama's own, e.g. logits_all), on kernels that do not crash on
    this CPU."""
    from llama_cpp import Llama

    with plain_cpu_weights() if has_amx_kernels() else nullcontext():
        return Llama(str(path), n_ctx=n_ctx, **{"verbose": False, **options})
