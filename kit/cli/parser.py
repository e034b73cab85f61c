"""The command line's arguments: one subcommand per thing the kit does (kit.cli runs them)."""

from __future__ import annotations

import argparse
from typing import get_args

from kit.config import LAUNCHERS, PROFILES
from kit.config.reference import text as settings_text
from kit.errors import KitError
from kit.models.inference import BACKENDS
from kit.outputs import RunDir
from kit.plan.memory import Stack


def build_parser() -> argparse.ArgumentParser:
    """The choices come from the config's own types, and train's and plan's --help list every setting from the
    schema (kit.config.reference): a new launcher, profile or setting needs no change here."""
    parser = argparse.ArgumentParser(prog="python -m kit", description="GRPO fine-tuning on one GPU.")
    commands = parser.add_subparsers(dest="command", required=True)
    settings = {"epilog": settings_text(), "formatter_class": argparse.RawDescriptionHelpFormatter}
    train = commands.add_parser("train", help="train a recipe with GRPO and save adapter + merged model", **settings)
    train.add_argument("recipe", nargs="?", help="recipe name (gsm8k), dotted module path, or path to a .py file "
                       f"(default: the --config file's `recipe`, e.g. a finished run's {RunDir('OUT').run_file})")
    train.add_argument("--config", help=f"YAML file of settings (same shape as {RunDir('OUT').run_file})")
    train.add_argument("--model", help="hub id or local folder (sets model.name)")
    train.add_argument("--steps", type=int, help="GRPO steps (sets grpo.max_steps)")
    train.add_argument("--out", help="output folder (default outputs/<recipe>-<timestamp>)")
    train.add_argument("--profile", choices=PROFILES, help="smoke: tiny model + sample data")
    train.add_argument("--data", help="local .jsonl/.csv/.parquet file, or 'sample' (sets data.path)")
    train.add_argument("--resume", action="store_true",
                       help="continue the interrupted run in --out from its latest checkpoint")
    train.add_argument("--gpu", help="plan memory for this GPU (T4, L4, A100-40GB, 16GB ...; default: the GPU here)")
    train.add_argument("--skip-plan", action="store_true", help="train even when the memory plan says it will not fit")
    train.add_argument("--num-processes", type=int, help="more than 1: one process per GPU through accelerate launch "
                       "(sets launch.num_processes)")
    train.add_argument("--launcher", choices=LAUNCHERS,
                       help="how the processes share the work: kit/train/launch/<launcher>.yaml (sets launch.launcher)")
    train.add_argument("overrides", nargs="*", metavar="section.key=value",
                       help="any setting listed below, e.g. grpo.beta=0.04")
    train.add_argument("-v", "--verbose", action="store_true",
                       help="TRL's whole metrics dict every step, every library warning, and the traceback of an error "
                       "in the recipe's code (default: one line a step)")

    check = commands.add_parser("check", help="will GRPO learn? a group of completions for each of a few training "
                                "prompts, scored: do their rewards differ? (kit train runs it too)", **settings)
    check.add_argument("recipe", nargs="?", help="recipe name, dotted module path, or .py file (default: the --config "
                       "file's `recipe`)")
    check.add_argument("--config", help="YAML file of settings, as for train")
    check.add_argument("--model", help="hub id or local folder (sets model.name)")
    check.add_argument("--profile", choices=PROFILES, help="smoke: tiny model + sample data")
    check.add_argument("--data", help="local .jsonl/.csv/.parquet file, or 'sample' (sets data.path)")
    check.add_argument("overrides", nargs="*", metavar="section.key=value",
                       help="any setting listed below, e.g. grpo.num_generations=16 grpo.learnability_prompts=12")
    add_verbose(check)

    export = commands.add_parser("export", help="convert a merged model to GGUF, quantize, verify in llama.cpp")
    export.add_argument("model_dir", help="a merged 16-bit model folder, e.g. outputs/<run>/merged")
    export.add_argument("--quant", nargs="+", default=["q4_k_m"],
                        help="f16 bf16 q8_0 q4_k_m q5_k_m q6_k ... (default q4_k_m)")
    export.add_argument("--out", help="folder for the files (default: <run>/gguf)")
    export.add_argument("--name", help="file name stem (default: the run folder's name)")
    export.add_argument("--no-verify", action="store_true", help="skip the llama.cpp checks (not recommended)")
    export.add_argument("--overwrite", action="store_true", help="replace GGUF files of the same name in --out")

    evaluate = commands.add_parser("eval", help="score a model (and its base) on held-out prompts")
    evaluate.add_argument("recipe", help="recipe name, dotted module path, or .py file")
    evaluate.add_argument("--model", help="merged model folder or hub id (default: the adapter's base)")
    evaluate.add_argument("--adapter", help="LoRA adapter folder: scores the base and base + adapter side by side")
    evaluate.add_argument("--baseline", help="another model to score beside --model (e.g. the base of a merged model)")
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--n", type=int, default=200, help="number of held-out prompts (default 200)")
    evaluate.add_argument("--data", help="local file or 'sample' (default: the run's eval data, else the hub)")
    evaluate.add_argument("--max-new-tokens", type=int, help="default: the run's grpo.max_completion_length")
    evaluate.add_argument("--backend", default="auto", choices=BACKENDS,
                          help="what generates: vLLM where installed (auto), or transformers")
    evaluate.add_argument("--json",
                          help="where to write the results (default: eval-<model>-<split>.json in the run folder)")
    add_reward_model(evaluate)
    add_verbose(evaluate)

    push = commands.add_parser("push", help="upload a run to the Hugging Face hub: merged model, adapter, GGUFs, "
                               "its record and a model card")
    push.add_argument("out", help="the run's folder (OUT)")
    push.add_argument("--repo", required=True, help="the model repository, e.g. your-name/qwen-gsm8k-grpo")
    push.add_argument("--private", action="store_true", help="create the repository private")

    chat = commands.add_parser("chat", help="talk to a model in the terminal, with the recipe's system prompt")
    chat.add_argument("model", nargs="?", help="merged model folder or hub id (default: the adapter's base)")
    chat.add_argument("--adapter", help="LoRA adapter folder")
    chat.add_argument("--recipe", help=f"whose system prompt to use (default: the run's, from "
                      f"{RunDir('OUT').run_file.name} beside the model; else gsm8k)")
    chat.add_argument("--system", help="a system prompt of your own instead")
    chat.add_argument("--image", help="a picture to show a vision-language model with the first message")
    chat.add_argument("--max-new-tokens", type=int, default=256)
    chat.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    chat.add_argument("--backend", default="auto", choices=BACKENDS,
                      help="what generates: vLLM where installed (auto), or transformers")
    add_verbose(chat)

    plan = commands.add_parser("plan", help="estimate GPU memory before loading: breakdown, verdict, what fits",
                               **settings)
    plan.add_argument("recipe", help="recipe name, dotted module path, or .py file")
    plan.add_argument("--model", help="hub id or local folder; only its config.json is read")
    plan.add_argument("--gpu", help="T4, L4, A10G, RTX4090, A100-40GB, H100 ... or a size such as 16GB "
                      "(default: the GPU here, else T4)")
    plan.add_argument("--config", help="YAML file of settings, as for train")
    plan.add_argument("--profile", choices=[p for p in PROFILES if p != "auto"],
                      help="smoke: the tiny model (default full)")
    plan.add_argument("--stack", choices=get_args(Stack),
                      help="trl: what plain TRL + FlashAttention 2 would need (the default with "
                      "launch.num_processes > 1, which loads with transformers + PEFT)")
    plan.add_argument("--image-size", type=picture_size, metavar="WxH",
                      help="a vision model's pictures, in pixels (e.g. 640x480), for their image tokens "
                      "(default: the recipe's PICTURE_SIZE)")
    plan.add_argument("overrides", nargs="*", metavar="section.key=value",
                      help="any setting listed below, e.g. grpo.num_generations=16")
    add_verbose(plan)

    doctor = commands.add_parser("doctor", help="can this machine run the default GPU route? GPU, driver, versions, "
                                 "vLLM with 4-bit + LoRA, a few GRPO steps; a JSON for bug reports")
    doctor.add_argument("--out", help="the JSON report (default outputs/doctor-<time>.json)")
    doctor.add_argument("--steps", type=int, default=3, help="GRPO steps on the default route (default 3)")

    rewards = commands.add_parser("rewards", help="work with a recipe's reward functions")
    rewards_commands = rewards.add_subparsers(dest="rewards_command", required=True)
    check = rewards_commands.add_parser("check", help="run the reward bundle on sample completions, with warnings")
    check.add_argument("recipe", help="recipe name, dotted module path, or .py file")
    check.add_argument("--completions", help='JSONL file: {"completion": ..., <dataset columns>} per line')
    check.add_argument("--data", help="training rows for the gold-answer check: a local .jsonl/.csv/.parquet file "
                       "(default: the recipe's sample data)")
    add_reward_model(check)
    add_verbose(check)

    recipes = commands.add_parser("recipes", help="list the shipped recipes; `recipes copy NAME FILE.py` starts yours")
    recipes_commands = recipes.add_subparsers(dest="recipes_command")
    copy = recipes_commands.add_parser("copy", help="write an editable copy of a shipped recipe, which trains as it is")
    copy.add_argument("name", help="a shipped recipe (python -m kit recipes lists them)")
    copy.add_argument("destination", help="the new file, e.g. my_task.py (never over an existing one)")
    return parser


def add_reward_model(command: argparse.ArgumentParser) -> None:
    """--reward-model NAME=MODEL, as the `reward_models` setting gives it to `kit train`."""
    command.add_argument("--reward-model", action="append", default=[], metavar="NAME=MODEL", dest="reward_models",
                         help="score the reward model reward NAME with MODEL (a hub id or a folder) instead of the "
                         "recipe's (or the run's), e.g. preference=kit:tiny-reward; may repeat")


def reward_model_options(given: list[str]) -> dict[str, str]:
    """{name: model} from --reward-model NAME=MODEL options, or one KitError for one that is not that shape."""
    pairs = [item.split("=", 1) for item in given]
    bad = [item for item, pair in zip(given, pairs) if len(pair) != 2 or not all(part.strip() for part in pair)]
    if bad:
        raise KitError(f"--reward-model {bad[0]!r}: write NAME=MODEL, e.g. --reward-model preference=kit:tiny-reward")
    return {name.strip(): model.strip() for name, model in pairs}


def add_verbose(command: argparse.ArgumentParser) -> None:
    """-v on a command that runs a recipe's code (train has its own, which says more)."""
    command.add_argument("-v", "--verbose", action="store_true",
                         help="the traceback of an error in the recipe's code, and every library warning")


def picture_size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    if not (width.isdigit() and height.isdigit() and int(width) > 0 and int(height) > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: give the width and height in pixels, e.g. 640x480")
    return int(width), int(height)

