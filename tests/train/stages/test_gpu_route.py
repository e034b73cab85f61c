"""Every shipped recipe's stages through the trainer classes Unsloth generates for a GPU, run on this CPU.

One process (tests/train/stages/gpu_route.py) applies Unsloth's GPU patches to TRL and trains one SFT step (where
the recipe has worked answers) and one GRPO step of each recipe with the kit's own stage code: tools and
environments included, transformers generation standing in for vLLM. What a GPU user's trainer is, holds and
trains on is checked here. The several-process argument path, under the same patch, is
test_unsloth_config_patch.py's.
"""

import json
import os
import subprocess
import sys

import pytest

from kit.recipes import known_recipes, load_recipe
from kit.train.stages.settings import LEFT_TO_UNSLOTH, PINNED_DEFAULTS
from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.gpu_route]  # one process, every recipe: about three minutes
RECIPES = known_recipes()


@pytest.fixture(scope="module")
def routes(tmp_path_factory) -> dict:
    """recipe -> what its stages did; Unsloth writes its generated trainers into the working directory."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "tests.train.stages.gpu_route", *RECIPES], env=env,
                            cwd=tmp_path_factory.mktemp("gpu-route"), capture_output=True, text=True, timeout=1500)
    lines = [json.loads(line.removeprefix("RESULT ")) for line in result.stdout.splitlines()
             if line.startswith("RESULT ")]
    assert result.returncode == 0 and len(lines) == len(RECIPES), result.stdout[-3000:] + result.stderr[-3000:]
    return {line["recipe"]: line for line in lines}


def stages_of(route: dict) -> dict:
    return {stage: route[stage] for stage in ("sft", "grpo") if stage in route}


@pytest.mark.parametrize("recipe", RECIPES)
def test_each_stage_trains_a_step_in_unsloths_generated_trainer(routes, recipe):
    route = routes[recipe]
    assert "error" not in route, route.get("error")
    expected = ["sft", "grpo"] if load_recipe(recipe).sft_target else ["grpo"]
    assert list(stages_of(route)) == expected
    for stage, ran in stages_of(route).items():
        assert ran["trainer"] == f"Unsloth{stage.upper()}Trainer" and ran["steps"] == 1, (stage, ran["trainer"])


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_trainer_holds_what_the_kit_asked(routes, recipe):
    """After training, the generated trainer's arguments are the config the kit built, but for what the kit leaves
    to Unsloth (its precision choice, and the fields only its config has); the pinned defaults are there."""
    for stage, ran in stages_of(routes[recipe]).items():
        asked, held = ran["asked"], ran["held"]
        changed = {k: (asked[k], held.get(k)) for k in asked if held.get(k) != asked[k]}
        if stage == "grpo" and load_recipe(recipe).pictures:  # image placeholders, banned once the processor is loaded
            assert "suppress_tokens" in changed.pop("generation_kwargs")[1]
            held = {k: v for k, v in held.items() if k != "generation_kwargs"}
        assert not set(changed) - set(LEFT_TO_UNSLOTH), (stage, changed)
        pinned = {k: repr(v) for k, v in PINNED_DEFAULTS.items() if k in held}
        assert {k: held[k] for k in pinned} == pinned, stage
        if stage == "sft":
            assert held["max_seq_length"] == asked["max_length"]  # Unsloth's own field: the kit's length


@pytest.mark.parametrize("recipe", [r for r in RECIPES if load_recipe(r).toolbox and load_recipe(r).sft_target])
def test_the_warm_start_of_a_tool_recipe_learns_the_calls_not_the_tools_results(routes, recipe):
    """The row as Unsloth's SFT trainer holds it: the tools shown in the prompt, and labels on the model's turns."""
    sft = routes[recipe]["sft"]
    assert "<|im_start|> tool" in sft["whole_text"] or "<|im_start|>tool" in sft["whole_text"]
    assert "Tool " in sft["whole_text"]  # the kit's tool template lists the tools in the system turn
    assert "<tool_call>" in sft["trained_text"] and "im_start" not in sft["trained_text"]
