"""The trainers Unsloth generates for a GPU, built and run on this CPU: the GPU route's own Python in every test run.

On a GPU, importing Unsloth rewrites TRL's SFTTrainer, GRPOTrainer and their configs (unsloth/models/rl.py,
PatchFastRL); its CPU backend does not, and wraps TRL's SFTTrainer in a subclass of its own instead, so a green
CPU run says nothing about the classes a GPU user trains with. `use_unsloths_gpu_trainers()` puts TRL's class
back and applies the GPU's patches by hand (global: call it in a process of its own). Run as a script, this
module then trains one step of each stage of each named recipe through the kit's own stage code, with
transformers generation standing in for vLLM, and prints one `RESULT {json}` line a recipe:

    python -m tests.train.stages.gpu_route python_tool guess_number
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import traceback
from pathlib import Path

from kit.models import loader  # Unsloth first: its CPU backend, as on any machine without a GPU


def use_unsloths_gpu_trainers() -> None:
    """What PatchFastRL does to TRL on a GPU, but for the fused LM-head kernels (they need CUDA). The trainer
    generation is called without Unsloth's wrapper, which would fall back to TRL's class with a warning."""
    import trl
    from trl.trainer import sft_trainer
    from unsloth.models import rl
    from unsloth.models._trl_tool_templates import patch_trl_tool_chat_templates

    cpu_wrapper = sft_trainer.SFTTrainer
    if getattr(cpu_wrapper, "_unsloth_cpu", False):  # Unsloth's rewrite reads the source of TRL's own class
        sft_trainer.SFTTrainer = trl.SFTTrainer = trl.trainer.SFTTrainer = cpu_wrapper.__mro__[1]
    rl.patch_trl_disable_gradient_checkpointing()
    patch_trl_tool_chat_templates()
    for trainer_file in ("sft_trainer", "grpo_trainer"):
        rl._patch_trl_rl_trainers_impl(trainer_file)
    rl.patch_trl_openenv()
    rl.patch_trl_vllm_generation()
    generated = (trl.SFTTrainer.__name__, trl.GRPOTrainer.__name__)
    assert generated == ("UnslothSFTTrainer", "UnslothGRPOTrainer"), f"Unsloth's trainers were not built: {generated}"


def config_fields(args) -> dict[str, str]:
    """Every field of a TRL config, as text (enums, dicts and None compare by their repr)."""
    return {f.name: repr(getattr(args, f.name, None)) for f in dataclasses.fields(args)}


def train_recipe(name: str, root: Path, judge_url: str) -> dict:
    """One step of each stage of recipe `name` (its smoke profile, SFT first when it has worked answers), as
    `kit train` runs them; what each trainer was, held and trained on."""
    from kit.data import drop_long_prompts
    from kit.recipes import load_recipe
    from kit.rewards.traits import trait
    from kit.train.prepare import prepare_run
    from kit.train.record import write_run_file
    from kit.train.resume import stop_on_request
    from kit.train.run import prepare_tools
    from kit.train.stages import STAGES, StageInputs

    recipe = load_recipe(name)
    stages = ["sft", "grpo"] if recipe.sft_target else ["grpo"]
    offline = {reward.name: "kit:tiny-reward" for reward in recipe.rewards.rewards if trait(reward.fn, "source")
               and trait(reward.fn, "source")["kind"] == "reward_model"}  # a reward model of the hub's, offline
    cfg = recipe.config({}, {"profile": "smoke", "output_dir": str(root / name), "eval": {"n": 0}, "stages": stages,
                             "sft": {"max_steps": 1}, "grpo": {"max_steps": 1, "memory_probe": True},  # as on a GPU
                             "reward_models": offline, "judge": {"base_url": judge_url}}, gpu=False)  # judge: here
    run = prepare_run(cfg, recipe)
    run.out.root.mkdir(parents=True)
    write_run_file(run.out, cfg)
    asked = {stage: config_fields(run.stage_args[stage]) for stage in stages}
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    if recipe.pictures:
        give_unsloths_modes(model)
    tools = prepare_tools(cfg, recipe, tokenizer)
    inputs = StageInputs(cfg, recipe, run.rewards, run.out,
                         drop_long_prompts(run.rows, tokenizer, cfg.data.max_prompt_length, tools), model, tokenizer)
    report = {}
    for stage in stages:
        with stop_on_request(run.out, model, cfg.recipe) as stopper:
            trainer = STAGES[stage].train(inputs, run.stage_args[stage], stopper)
        report[stage] = {"trainer": type(trainer).__name__, "steps": trainer.state.global_step,
                         "asked": asked[stage], "held": config_fields(trainer.args)}
        if stage == "sft" and "input_ids" in trainer.train_dataset.column_names:  # pictures: the collator tokenizes
            report[stage] |= trained_text(trainer.train_dataset[0], tokenizer)
    return report


def give_unsloths_modes(model) -> None:
    """Unsloth's CPU backend refuses FastVisionModel, so this CPU loads a vision model with transformers + PEFT;
    Unsloth's generated GRPO trainer calls the for_training / for_inference that FastVisionModel binds to the
    model and each `.model` below it on a GPU (unsloth/models/vision.py, after get_peft_model). Bound here alike."""
    import functools

    from unsloth.models.vision import FastBaseModel

    layer = model
    while layer is not None:
        layer.for_training = functools.partial(FastBaseModel.for_training, layer)
        layer.for_inference = functools.partial(FastBaseModel.for_inference, layer)
        layer = getattr(layer, "model", None)


def trained_text(row: dict, tokenizer) -> dict:
    """A training row of the SFT trainer, whole and as the loss sees it (the tokens whose label is not -100)."""
    trained = [token for token, label in zip(row["input_ids"], row["labels"]) if label != -100]
    return {"whole_text": tokenizer.decode(row["input_ids"]), "trained_text": tokenizer.decode(trained)}


def main(names: list[str]) -> None:
    use_unsloths_gpu_trainers()
    from tests.rewards.judge.servers import ComplyingJudge

    root = Path(tempfile.mkdtemp(prefix="kit-gpu-route-"))
    judge = ComplyingJudge()  # what a judge says does not matter here, only that the trainers call it
    for name in names:
        try:
            result = train_recipe(name, root, judge.base_url)
        except Exception:  # noqa: BLE001  (one recipe's failure is its result; the others still run)
            result = {"error": traceback.format_exc()[-4000:]}
        print("RESULT " + json.dumps({"recipe": name, **result}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
