"""Writes the Colab and Kaggle notebooks from one flow; only the install cell and the paths differ.

    .venv/bin/python notebooks/build.py        # after editing the cells here; tests check they match

All logic lives in `kit`: a cell calls the CLI or one kit function. Notebooks are stored without outputs.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent
REPO_URL = "https://github.com/grpo-kit/grpo-kit"  # where the notebooks clone the kit from

PLATFORMS = {
    "colab": {
        "title": "Colab", "workdir": "/content",
        "runtime": "Runtime > Change runtime type > T4 GPU",
        "secrets": "the key icon in the left bar (switch on notebook access)",
        "note": "",
        "processes": "one GPU here",
    },
    "kaggle": {
        "title": "Kaggle", "workdir": "/kaggle/working",
        "runtime": "Settings > Accelerator > GPU T4 x2",
        "processes": "2: both T4s (DDP in 16-bit, not yet run on GPUs)",
        "secrets": "Add-ons > Secrets",
        "note": " Switch on Settings > Internet first: the install and the model download need it.",
    },
}


# A failed `!command` does not stop Run all; IPython leaves its exit status in _exit_code.
STOP_ON_FAILURE = ('if _exit_code:\n    raise RuntimeError(f"{step} failed (exit code {{_exit_code}}): '
                   'see the messages above")')


def stop_on_failure(step: str, indent: str = "") -> str:
    return "".join(f"{indent}{line}\n" for line in STOP_ON_FAILURE.format(step=step).splitlines())


def cells(platform: str) -> list:
    p = PLATFORMS[platform]
    return [
        new_markdown_cell(
            f"# GRPO on GSM8K with grpo-kit ({p['title']})\n\n"
            "Trains Qwen2.5-1.5B-Instruct to solve grade-school math with GRPO, on one T4: install, check the GPU, "
            "plan the memory, train, read the health report, compare before/after, export a GGUF verified in "
            "llama.cpp, try it, and optionally upload it.\n\n"
            f"Set the GPU ({p['runtime']}), then Run all.{p['note']} With `PROFILE = \"smoke\"` the whole "
            "notebook runs on a CPU in a few minutes with the kit's tiny model and sample data (this is how CI "
            "runs it); it proves the pipeline, it does not train anything useful."
        ),
        new_code_cell(
            "# Parameters\n"
            'PROFILE = "full"                          # "smoke": tiny model + sample data, runs on a CPU\n'
            'MODEL = "unsloth/Qwen2.5-1.5B-Instruct"   # any hub id Unsloth loads\n'
            'CONFIG = "configs/gsm8k_16gb.yaml"        # the memory-optimized T4 settings\n'
            "STEPS = 250                               # GRPO steps (full profile)\n"
            f"NPROC = 1                                 # training processes, one per GPU; {p['processes']}\n"
            f'OUT = "{p["workdir"]}/outputs/gsm8k-grpo"  # everything the run writes\n'
            'QUANT = "q4_k_m"                          # GGUF type: q4_k_m, q5_k_m, q8_0, f16 ...\n'
            'HUB_REPO = ""                             # e.g. "your-name/qwen2.5-1.5b-gsm8k-grpo"; empty: no upload\n'
            "INSTALL = True                            # False where the kit is already installed\n"
            f'KIT_DIR = "{p["workdir"]}/grpo-kit"',
            metadata={"tags": ["parameters"]},
        ),
        new_markdown_cell(
            "## The driver\nThe kit's GPU install (torch 2.13.0, vLLM 0.31.0 from PyPI) is built for CUDA 13.0, "
            "which needs NVIDIA driver 580 or newer. With an older one it installs and never sees the GPU, so this "
            "cell reads the driver before anything is installed."
        ),
        new_code_cell(
            "import shutil, subprocess\n"
            "query = ['nvidia-smi', '--query-gpu=driver_version', '--format=csv,noheader']\n"
            "DRIVER = (subprocess.run(query, capture_output=True, text=True).stdout.split() or [None])[0] "
            "if shutil.which('nvidia-smi') else None\n"
            "print('NVIDIA driver:', DRIVER or 'none')\n"
            'if PROFILE == "full" and DRIVER and int(DRIVER.split(".")[0]) < 580:\n'
            '    raise SystemExit(f"The NVIDIA driver here is {DRIVER}; the kit\'s GPU install needs 580 or newer '
            f'(CUDA 13.0). Choose a newer runtime or image ({p["runtime"]}), or set PROFILE = \\"smoke\\".")'
        ),
        new_markdown_cell(
            "## Install\nClones the kit and installs it with its GPU and GGUF extras (a few minutes): Unsloth, TRL, "
            "vLLM 0.31.0 with its bitsandbytes plugin (4-bit weights + vLLM), torch 2.13.0."
        ),
        new_code_cell(
            "import os, sys\n"
            "if INSTALL:\n"
            "    if not os.path.isdir(KIT_DIR):\n"
            f"        !git clone --depth 1 {REPO_URL} {{KIT_DIR}}\n"
            + stop_on_failure("cloning the kit", "        ")
            + '    !{sys.executable} -m pip install -q -e "{KIT_DIR}[gpu,gguf]"\n'
            + stop_on_failure("the install", "    ")
            + "    os.chdir(KIT_DIR)\n"
            "print(os.getcwd())"
        ),
        new_markdown_cell(
            "## Can this runtime run the default route? `kit doctor`\nIn a few minutes on this GPU: its compute "
            "capability, the driver, bf16, the installed versions against the kit's pins, vLLM's engine with 4-bit "
            "weights and a LoRA adapter, and a few GRPO steps of the default route on a tiny random model, with the "
            "peak memory beside `kit plan`'s figure. It ends with a one-line verdict and writes a JSON to paste into "
            "a bug report; better to learn it now than forty minutes into a run. On a CPU it says what it could not "
            "check."
        ),
        new_code_cell(
            '!{sys.executable} -m kit doctor --out {OUT}-doctor.json\n'
            + STOP_ON_FAILURE.format(step="kit doctor")
        ),
        new_markdown_cell("## The GPU"),
        new_code_cell(
            "from kit.env import driver_problem, gpu_name\n"
            "from kit.plan.gpus import live_gpu_problem\n"
            "print('GPU:', gpu_name() or 'none')\n"
            'if PROFILE == "full" and gpu_name() is None:\n'
            f'    raise SystemExit(driver_problem() or "No GPU: {p["runtime"]}, or set PROFILE = \\"smoke\\"")\n'
            'if PROFILE == "full" and live_gpu_problem():\n'
            "    raise SystemExit(live_gpu_problem())\n"
            'SETTINGS = f"--model {MODEL} --config {CONFIG}" if PROFILE == "full" else "--profile smoke"\n'
            "# several processes cannot hand 4-bit weights to vLLM (the kit refuses it), so they train in 16-bit\n"
            'OVERRIDES = "model.load_in_4bit=false" if PROFILE == "full" and NPROC > 1 else ""'
        ),
        new_markdown_cell(
            "## Will it fit?\n`kit plan` estimates the peak GPU memory from the model's config.json before "
            "anything is loaded, says whether it fits the T4, and what the largest settings are that would."
        ),
        new_code_cell(
            "!{sys.executable} -m kit plan gsm8k {SETTINGS} --gpu T4 launch.num_processes={NPROC} {OVERRIDES}"
        ),
        new_markdown_cell(
            "## Train\nGRPO with the gsm8k recipe's rewards. Watch `reward` rise and `reward_std` stay above 0; "
            "the kit prints a plain-words warning when something goes wrong, and sample completions every few "
            "steps. It evaluates on held-out problems before and after, and merges the LoRA into 16-bit weights."
        ),
        new_code_cell(
            'STEPS_FLAG = f"--steps {STEPS}" if PROFILE == "full" else ""\n'
            "!{sys.executable} -m kit train gsm8k {SETTINGS} {STEPS_FLAG} --num-processes {NPROC} --out {OUT} "
            "{OVERRIDES}\n"
            + STOP_ON_FAILURE.format(step="training")
        ),
        new_markdown_cell("## Health report, curves and before/after"),
        new_code_cell(
            "from pathlib import Path\n"
            "from IPython.display import Image, Markdown, display\n"
            "out = Path(OUT)\n"
            "report = (out / 'report.md').read_text()\n"
            "display(Markdown(report.split('## Plots')[0]))  # timings, held-out table, health diagnostics\n"
            "for plot in sorted((out / 'plots').glob('*.png')):\n"
            "    display(Image(str(plot)))"
        ),
        new_markdown_cell(
            "## Export to GGUF, verified in llama.cpp\nConverts the merged model, quantizes it, and checks in "
            "llama.cpp that the tokenizer, chat template, end-of-turn token and greedy outputs match the "
            "original; it also writes an Ollama Modelfile."
        ),
        new_code_cell("!{sys.executable} -m kit export {OUT}/merged --quant {QUANT}\n"
                      + STOP_ON_FAILURE.format(step="the export")),
        new_markdown_cell("## Try it in llama.cpp"),
        new_code_cell(
            "# load_gguf is llama_cpp.Llama, on llama.cpp's ordinary kernels where its AMX ones could crash\n"
            "from kit.export.gguf.load import load_gguf\n"
            "from kit.recipes import load_recipe\n"
            "gguf = next((out / 'gguf').glob(f'*.{QUANT.upper()}.gguf'))\n"
            "llm = load_gguf(gguf, n_ctx=1024)\n"
            "question = 'Tom has 3 boxes of 12 pencils and gives away 10. How many pencils are left?'\n"
            "messages = [{'role': 'system', 'content': load_recipe('gsm8k').system_prompt},\n"
            "            {'role': 'user', 'content': question}]\n"
            "reply = llm.create_chat_completion(messages=messages, max_tokens=256, temperature=0)\n"
            "print(reply['choices'][0]['message']['content'])"
        ),
        new_markdown_cell(
            f"## Upload to the hub (optional)\nNeeds `HUB_REPO` set above and an `HF_TOKEN` secret with write "
            f"access ({p['secrets']}); without either it says so and skips."
        ),
        new_code_cell(
            "from kit.export.hub import hub_token, push_run\n"
            "print(push_run(out, HUB_REPO, hub_token()))"
        ),
    ]


def build(platform: str) -> nbformat.NotebookNode:
    notebook = new_notebook(cells=cells(platform))
    notebook.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "accelerator": "GPU",
    }
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{platform}-{index}"  # stable ids: rebuilding gives the same file
    return notebook


def path_for(platform: str) -> Path:
    return HERE / f"gsm8k_grpo_{platform}.ipynb"


def main() -> None:
    for platform in PLATFORMS:
        nbformat.write(build(platform), path_for(platform))
        print(path_for(platform))


if __name__ == "__main__":
    main()
