"""Unsloth's GPU-side GRPOConfig and SFTConfig, forced on this CPU, change no field of the configs the kit builds.

On a GPU, Unsloth rewrites TRL's configs when it is imported: unset values get its own defaults (epsilon_high
None becomes 0.28 with an explicit dapo, 5.0 with cispo; vllm_importance_sampling_correction False, ...), dr_grpo
loses reward scaling, and __init__ forces reentrant checkpointing. Its CPU backend skips that patch, so a value
left to it would make one config train differently on a GPU than in every test here. The probe builds the kit's
configs with TRL's classes, then again after applying Unsloth's patch by hand, in a process of its own (the patch
is global), and compares every field: only kit.train.stages.settings.LEFT_TO_UNSLOTH may differ.
"""

import json
import os
import subprocess
import sys

import pytest

from kit.train.stages.settings import LEFT_TO_UNSLOTH
from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.gpu_route]  # two processes that import Unsloth: half a minute

# Each a `grpo` section: the losses the kit offers, with their settings left unset and set by hand.
CONFIGS = {
    "defaults (dapo)": {},
    "grpo": {"loss_type": "grpo"},
    "bnpo with a KL term": {"loss_type": "bnpo", "beta": 0.04},
    "dr_grpo": {"loss_type": "dr_grpo"},
    "dr_grpo, batch scaling": {"loss_type": "dr_grpo", "scale_rewards": "batch"},
    "cispo": {"loss_type": "cispo"},
    "dapo, clip-higher and masking": {"loss_type": "dapo", "epsilon_high": 0.28, "mask_truncated_completions": True},
    "sapo": {"loss_type": "sapo"},
    "gspo": {"loss_type": "gspo"},
}

PROBE = """
import dataclasses, json, sys
from kit.models import loader  # Unsloth first: its CPU backend, which leaves TRL as it is
from kit import ranks
from kit.config import build_config
from kit.rewards import RewardBundle
from kit.train.stages.grpo import grpo_args
from kit.train.stages.sft import sft_args

def reward(completions, **kwargs):
    return [0.0] * len(completions)

configs = json.loads(sys.argv[1])
# adamw_torch: on a CPU the patch also swaps 8-bit Adam for a CPU optimizer, which a GPU never sees
built = {name: build_config([{"grpo": {**grpo, "optim": "adamw_torch"}}]) for name, grpo in configs.items()}
several = {name: build_config([{"model": {"gradient_checkpointing": "true", "full_finetuning": full,
                                          "load_in_4bit": False, "fast_inference": False},
                                "grpo": {"optim": "adamw_torch"}, "sft": {"optim": "adamw_torch"}}])
           for name, full in (("lora", False), ("full fine-tuning", True))}

def fields(args):
    return {f.name: repr(getattr(args, f.name, None)) for f in dataclasses.fields(args)}

def every_config():
    one = {name: fields(grpo_args(cfg, "kit-probe", RewardBundle((reward, 1.0)))) for name, cfg in built.items()}
    one["sft"] = fields(sft_args(built["defaults (dapo)"], "kit-probe"))
    ranks.in_worker = lambda: True  # a rank of a multi-process run, without starting one
    for name, cfg in several.items():
        one[f"grpo, several processes, {name}"] = fields(grpo_args(cfg, "kit-probe", RewardBundle((reward, 1.0))))
        one[f"sft, several processes, {name}"] = fields(sft_args(cfg, "kit-probe"))
    ranks.in_worker = lambda: False
    return one

plain = every_config()
from tests.train.stages.gpu_route import use_unsloths_gpu_trainers
use_unsloths_gpu_trainers()  # what Unsloth does to TRL on a GPU at import
patched = every_config()
print("RESULT " + json.dumps({"plain": plain, "patched": patched}))
"""
def run_python(code: str, *args: str, cwd) -> subprocess.CompletedProcess:
    """In a folder of the test's own: Unsloth writes its compiled cache into the working directory."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> dict:
    result = run_python(PROBE, json.dumps(CONFIGS), cwd=tmp_path_factory.mktemp("probe"))
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_the_patch_is_really_applied(tmp_path):
    """Unsloth's own printouts are not proof; a value it is known to rewrite must change under the patch
    when the kit leaves it to Unsloth (here: TRL's epsilon_high=None with dapo, built without the kit)."""
    code = ("from kit.models import loader\nfrom trl import GRPOConfig\nfrom unsloth.models import rl\n"
            "rl._patch_trl_rl_trainers('grpo_trainer')\nimport trl\n"
            "a = trl.GRPOConfig(output_dir='/tmp/kit-probe', loss_type='dapo', per_device_train_batch_size=8, "
            "num_generations=8, optim='adamw_torch')\nprint('EPS', a.epsilon_high)")
    result = run_python(code, cwd=tmp_path)
    assert "EPS 0.28" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]


@pytest.mark.parametrize("name", [*CONFIGS, "sft"])
def test_no_trl_field_changes_under_unsloths_gpu_patch(probe, name):
    """Every field of the built config, not only the kit's settings: a default Unsloth changes silently must be
    pinned by the kit (PINNED_DEFAULTS), or left to Unsloth with a reason (LEFT_TO_UNSLOTH)."""
    plain, patched = probe["plain"][name], probe["patched"][name]
    changed = {k: (plain[k], patched[k]) for k in plain if k in patched and plain[k] != patched[k]}
    unexplained = {k: v for k, v in changed.items() if k not in LEFT_TO_UNSLOTH}
    assert not unexplained, f"{name}: Unsloth's GPU patch changes {unexplained} (kit value, value on a GPU)"


@pytest.mark.parametrize("stage", ["grpo", "sft"])
@pytest.mark.parametrize("finetuning", ["lora", "full fine-tuning"])
def test_several_processes_keep_non_reentrant_checkpointing_under_the_patch(probe, stage, finetuning):
    """The patched config's __init__ rewrites use_reentrant to True; DDP needs False (with find_unused, the first
    backward crashes), so the kit sets it after the config is built."""
    name = f"{stage}, several processes, {finetuning}"
    for side in ("plain", "patched"):
        held = probe[side][name]
        assert held["gradient_checkpointing"] == "True"
        assert held["gradient_checkpointing_kwargs"] == "{'use_reentrant': False}", (side, held)
    if stage == "grpo":
        expected = str(finetuning == "full fine-tuning")
        assert probe["patched"][name]["ddp_find_unused_parameters"] == expected


def test_pinned_defaults_reach_trl_on_both_sides(probe):
    for side in ("plain", "patched"):
        held = probe[side]["defaults (dapo)"]
        assert held["vllm_importance_sampling_correction"] == "True"  # TRL's default; Unsloth's would be False
        assert held["logging_nan_inf_filter"] == "False" and held["torch_empty_cache_steps"] == "None"
        assert probe[side]["sft"]["padding_free"] == "False"


def test_unset_values_are_resolved_by_the_kit(probe):
    assert probe["plain"]["defaults (dapo)"]["epsilon_high"] == "0.2"  # TRL's rule: the lower clip
    assert probe["plain"]["cispo"]["epsilon_high"] == "5.0"  # CISPO's cap on the importance weight
    assert probe["plain"]["dr_grpo"]["scale_rewards"] == "'none'"  # Dr. GRPO does not scale
    assert probe["plain"]["dr_grpo, batch scaling"]["scale_rewards"] == "'batch'"  # asked for by name: kept
    gspo = probe["plain"]["gspo"]  # TRL's GSPO settings, with the paper's clip range
    assert (gspo["loss_type"], gspo["importance_sampling_level"]) == ("'grpo'", "'sequence'")
    assert (gspo["epsilon"], gspo["epsilon_high"]) == ("0.0003", "0.0004")
