"""Unsloth's GPU-side GRPOConfig patch, forced on this CPU, changes none of the settings the kit passes.

On a GPU, Unsloth rewrites TRL's GRPOConfig when it is imported: unset values get its own defaults
(epsilon_high None becomes 0.28 with an explicit dapo, 5.0 with cispo) and dr_grpo loses reward scaling.
Its CPU backend skips that patch, so a value left to it would make one config train differently on a GPU
than in every test here. The probe builds the kit's GRPOConfig for each config below with TRL's class,
then again after applying Unsloth's patch by hand, in a process of its own (the patch is global).
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # two processes that import Unsloth: half a minute

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
}

PROBE = """
import json, sys
from kit.models import loader  # Unsloth first: its CPU backend, which leaves TRL as it is
from kit.config import build_config
from kit.rewards import RewardBundle
from kit.train.stages.grpo import grpo_args, trainer_settings

def reward(completions, **kwargs):
    return [0.0] * len(completions)

configs = json.loads(sys.argv[1])
# adamw_torch: on a CPU the patch also swaps 8-bit Adam for a CPU optimizer, which a GPU never sees
built = {name: build_config([{"grpo": {**grpo, "optim": "adamw_torch"}}]) for name, grpo in configs.items()}

def passed(cfg, args):
    names = [*trainer_settings(cfg.grpo), "seed", "reward_weights", "save_strategy"]
    return {n: str(getattr(getattr(args, n), "value", getattr(args, n))) for n in names}

def every_config():
    return {name: passed(cfg, grpo_args(cfg, "kit-probe", RewardBundle((reward, 1.0)))) for name, cfg in built.items()}

plain = every_config()
from unsloth.models import rl
rl._patch_trl_rl_trainers("grpo_trainer")  # what Unsloth does on a GPU at import
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


@pytest.mark.parametrize("name", CONFIGS)
def test_no_kit_setting_changes_under_unsloths_gpu_patch(probe, name):
    plain, patched = probe["plain"][name], probe["patched"][name]
    changed = {k: (plain[k], patched[k]) for k in plain if plain[k] != patched[k]}
    assert not changed, f"{name}: Unsloth's GPU patch changes {changed} (kit value, value on a GPU)"


def test_unset_values_are_resolved_by_the_kit(probe):
    assert probe["plain"]["defaults (dapo)"]["epsilon_high"] == "0.2"  # TRL's rule: the lower clip
    assert probe["plain"]["cispo"]["epsilon_high"] == "5.0"  # CISPO's cap on the importance weight
    assert probe["plain"]["dr_grpo"]["scale_rewards"] == "none"  # Dr. GRPO does not scale
    assert probe["plain"]["dr_grpo, batch scaling"]["scale_rewards"] == "batch"  # asked for by name: kept
