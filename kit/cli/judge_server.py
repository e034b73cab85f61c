"""llama.cpp's OpenAI-compatible server (llama-cpp-python's `server` extra), started for an LLM judge reward.

    python -m kit.cli.judge_server                       # SmolLM2-135M-Instruct (offline), port 8765, as `judge`
    python -m kit.cli.judge_server --model my.gguf --port 9000 --n_ctx 4096

It is `python -m llama_cpp.server` with the kit's defaults (the packaged SmolLM2 GGUF, the port and model name
the `judge:` settings expect) and one fix: on a Xeon with AMX, llama.cpp's AMX matmul crashes the process on
its first request, so the weights load on llama.cpp's ordinary CPU kernels (kit.export.gguf.load). Any other
`llama_cpp.server` option passes through. It is a command of its own (`make judge-server`), so it sits with the
commands: it needs the packaged model (kit.models) and the AMX fix (kit.export), both above the judge's layer.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext

from kit.config.judging import JUDGE_PORT

DEFAULTS = {"--host": "127.0.0.1", "--port": str(JUDGE_PORT), "--model_alias": "judge", "--n_ctx": "2048"}


def server_arguments(argv: list[str]) -> list[str]:
    """argv with the kit's defaults added for every option it does not set; --model defaults to SmolLM2's GGUF."""
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    added = [part for option, value in DEFAULTS.items() if option not in given for part in (option, value)]
    if "--model" not in given:
        from kit.models.smollm2 import packaged_gguf

        added += ["--model", str(packaged_gguf())]
    return [*argv, *added]


def main(argv: list[str] | None = None) -> None:
    from llama_cpp.server.__main__ import main as serve

    from kit.export.gguf.load import has_amx_kernels, plain_cpu_weights

    sys.argv = [sys.argv[0], *server_arguments(sys.argv[1:] if argv is None else argv)]
    print(f"judge server: llama.cpp's OpenAI-compatible server, {' '.join(sys.argv[1:])}", flush=True)
    with plain_cpu_weights() if has_amx_kernels() else nullcontext():
        serve()


if __name__ == "__main__":
    main()
