"""The command line: `python -m kit train RECIPE ...` (the Makefile's targets call this).

    python -m kit train gsm8k                                  # smoke run without a GPU, full with one
    python -m kit train gsm8k --model unsloth/Qwen2.5-3B-Instruct --steps 500 --out runs/q3b
    python -m kit train ./my_recipe.py --config my.yaml grpo.learning_rate=1e-5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kit.diskspace import disk_full_error, is_disk_full
from kit.errors import KitError
from kit import ranks


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kit", description="GRPO fine-tuning on one GPU.")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train a recipe with GRPO and save adapter + merged model")
    train.add_argument("recipe", help="recipe name (gsm8k), dotted module path, or path to a .py file")
    train.add_argument("--config", help="YAML file of settings (same shape as OUT/run.yaml)")
    train.add_argument("--model", help="hub id or local folder (sets model.name)")
    train.add_argument("--steps", type=int, help="GRPO steps (sets grpo.max_steps)")
    train.add_argument("--out", help="output folder (default outputs/<recipe>-<timestamp>)")
    train.add_argument("--profile", choices=["auto", "smoke", "full"], help="smoke: tiny model + sample data")
    train.add_argument("--data", help="local .jsonl/.csv/.parquet file, or 'sample' (sets data.path)")
    train.add_argument("--resume", action="store_true", help="continue the interrupted run in --out from its latest checkpoint")
    train.add_argument("--gpu", help="plan memory for this GPU (T4, L4, A100-40GB, 16GB ...; default: the GPU here)")
    train.add_argument("--skip-plan", action="store_true", help="train even when the memory plan says it will not fit")
    train.add_argument("--num-processes", type=int, help="more than 1: one process per GPU through accelerate launch "
                       "(sets launch.num_processes)")
    train.add_argument("--launcher", choices=["ddp", "zero2", "zero3", "fsdp"],
                       help="how the processes share the work: kit/launch/<launcher>.yaml (sets launch.launcher)")
    train.add_argument("overrides", nargs="*", metavar="section.key=value", help="any setting, e.g. grpo.beta=0.04")

    export = commands.add_parser("export", help="convert a merged model to GGUF, quantize, verify in llama.cpp")
    export.add_argument("model_dir", help="a merged 16-bit model folder, e.g. outputs/<run>/merged")
    export.add_argument("--quant", nargs="+", default=["q4_k_m"], help="f16 bf16 q8_0 q4_k_m q5_k_m q6_k ... (default q4_k_m)")
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
    evaluate.add_argument("--json", help="where to write the results (default: eval-<model>-<split>.json in the run folder)")

    chat = commands.add_parser("chat", help="talk to a model in the terminal, with the recipe's system prompt")
    chat.add_argument("model", nargs="?", help="merged model folder or hub id (default: the adapter's base)")
    chat.add_argument("--adapter", help="LoRA adapter folder")
    chat.add_argument("--recipe", default="gsm8k", help="whose system prompt to use (default gsm8k)")
    chat.add_argument("--system", help="a system prompt of your own instead")
    chat.add_argument("--max-new-tokens", type=int, default=256)
    chat.add_argument("--temperature", type=float, default=0.0)

    plan = commands.add_parser("plan", help="estimate GPU memory before loading: breakdown, verdict, what fits")
    plan.add_argument("recipe", help="recipe name, dotted module path, or .py file")
    plan.add_argument("--model", help="hub id or local folder; only its config.json is read")
    plan.add_argument("--gpu", help="T4, L4, A10G, RTX4090, A100-40GB, H100 ... or a size such as 16GB "
                      "(default: the GPU here, else T4)")
    plan.add_argument("--config", help="YAML file of settings, as for train")
    plan.add_argument("--profile", choices=["smoke", "full"], help="smoke: the tiny model (default full)")
    plan.add_argument("--stack", choices=["unsloth", "trl"],
                      help="trl: what plain TRL + FlashAttention 2 would need (the default with "
                      "launch.num_processes > 1, which loads with transformers + PEFT)")
    plan.add_argument("overrides", nargs="*", metavar="section.key=value", help="any setting, e.g. grpo.num_generations=16")

    rewards = commands.add_parser("rewards", help="work with a recipe's reward functions")
    rewards_commands = rewards.add_subparsers(dest="rewards_command", required=True)
    check = rewards_commands.add_parser("check", help="run the reward bundle on sample completions, with warnings")
    check.add_argument("recipe", help="recipe name, dotted module path, or .py file")
    check.add_argument("--completions", help='JSONL file: {"completion": ..., <dataset columns>} per line')
    return parser


def cli_layer(args: argparse.Namespace) -> dict:
    """The CLI's settings as a config layer: named flags first, then section.key=value overrides."""
    from kit.config import deep_merge, parse_overrides

    flags = {  # `plan` shares --model and --profile with `train`, not the rest
        ("model", "name"): args.model,
        ("grpo", "max_steps"): getattr(args, "steps", None),
        ("data", "path"): getattr(args, "data", None),
        ("launch", "num_processes"): getattr(args, "num_processes", None),
        ("launch", "launcher"): getattr(args, "launcher", None),
    }
    layer: dict = {"recipe": args.recipe}
    for (section, key), value in flags.items():
        if value is not None:
            layer.setdefault(section, {})[key] = value
    if getattr(args, "out", None):
        layer["output_dir"] = args.out
    if args.profile:
        layer["profile"] = args.profile
    return deep_merge(layer, parse_overrides(args.overrides))


def train_command(args: argparse.Namespace) -> int:
    ranks.quiet_other_ranks()  # before the imports below, which print banners
    from kit.config import read_yaml, resolve_config
    from kit.env import driver_problem, has_gpu
    from kit.recipe import load_recipe

    if not has_gpu() and (problem := driver_problem()):  # torch sees no GPU: say why before the CPU takes over
        print(f"train: {problem}")
    recipe = load_recipe(args.recipe)
    if args.resume and not args.out:
        raise KitError("--resume needs --out: the folder of the interrupted run")
    config_file = f"{args.out}/run.yaml" if args.resume else args.config  # a resumed run keeps its settings
    file_layer = read_yaml(config_file) if config_file else {}
    layer = cli_layer(args)
    if ranks.in_worker():  # started by a launcher: its process count is the truth
        layer.setdefault("launch", {})["num_processes"] = ranks.world_size()
    cfg = resolve_config(
        recipe.defaults, file_layer, layer, gpu=has_gpu(), recipe_has_sample=recipe.write_sample is not None
    )
    from kit.plan.preflight import check_before_training

    if ranks.in_worker():  # the launching process planned and checked; the ranks train
        plan = None
    else:
        plan = check_before_training(cfg, args.gpu, args.skip_plan)
        if cfg.launch.num_processes > 1:
            from kit.launch.launcher import launch

            return launch(cfg, recipe, args.argv[1:], resume=args.resume)
    from kit.train.run import Interrupted, run_training

    try:
        result = run_training(cfg, recipe, resume=args.resume, plan=plan)
    except Interrupted as stop:
        if ranks.is_main():
            print(stop, file=sys.stderr)
        ranks.record_interruption()
        return 130
    if not result.gguf_verified:
        ranks.record_failure(KitError(f"the GGUF files failed verification: see {result.output_dir / 'gguf'}"))
        return 1
    return 0


def plan_command(args: argparse.Namespace) -> int:
    from kit.config import read_yaml, resolve_config
    from kit.plan.gpus import GPUS
    from kit.plan.preflight import default_stack, target_gpu
    from kit.plan.planner import NO_FIT, assess, describe, make_plan
    from kit.plan.shapes import read_shape
    from kit.recipe import load_recipe

    recipe = load_recipe(args.recipe)
    layer = cli_layer(args)
    cfg = resolve_config(recipe.defaults, read_yaml(args.config) if args.config else {}, layer, gpu=True,
                         recipe_has_sample=recipe.write_sample is not None)
    shape = read_shape(cfg.model.name)
    target = target_gpu(args.gpu)
    if target is None:
        print("no GPU here and no --gpu: planning for a T4 (Colab / Kaggle free tier)\n")
        target = ("T4", GPUS["T4"])
    stack = args.stack or default_stack(cfg)
    plan = make_plan(cfg, shape, *target, stack=stack)
    print(describe(plan))
    others = [f"{name} {assess(cfg, shape, name, gib, stack).verdict}" for name, gib in GPUS.items()]
    print(f"\nother GPUs: {', '.join(others)}")
    return 1 if plan.verdict == NO_FIT else 0


def export_command(args: argparse.Namespace) -> int:
    from kit.export.gguf.export import export_gguf

    result = export_gguf(Path(args.model_dir), args.quant, Path(args.out) if args.out else None, args.name,
                         check=not args.no_verify, overwrite=args.overwrite)
    for path in result.files:
        print(f"  {path}")
    print(f"  {result.modelfile}  (ollama create NAME -f {result.modelfile})")
    if not result.ok:
        print("error: a required check failed for at least one file (see the table above and verification.json)",
              file=sys.stderr)
        return 1
    return 0


def rewards_command(args: argparse.Namespace) -> int:
    from kit.recipe import load_recipe
    from kit.rewards.dry_run import load_samples, print_report, run_bundle

    recipe = load_recipe(args.recipe)
    samples = load_samples(recipe, args.completions)
    runs = run_bundle(recipe.rewards, samples)
    print_report(runs, samples)
    return 1 if any(run.error for run in runs) else 0


def eval_command(args: argparse.Namespace) -> int:
    from kit.config import DataConfig
    from kit.data import load_rows
    from kit.eval.evaluate import compare, evaluate, format_table, run_context, write_json
    from kit.eval.generate import Sampling
    from kit.models.inference import load_for_inference
    from kit.recipe import load_recipe

    at_least_one(args.n, "--n", "the number of held-out prompts to score")
    if args.max_new_tokens is not None:
        at_least_one(args.max_new_tokens, "--max-new-tokens", "the longest answer to generate, in tokens")
    recipe = load_recipe(args.recipe)
    run = run_context(args.model, args.adapter)
    data = args.data or (run.get("eval") or {}).get("path") or (run.get("data") or {}).get("path")
    rows = load_rows(recipe, DataConfig(path=data, split=args.split, limit=args.n))
    tokens = args.max_new_tokens or (run.get("grpo") or {}).get("max_completion_length") or \
        recipe.defaults.get("grpo", {}).get("max_completion_length", 256)
    sampling = Sampling(max_new_tokens=tokens)
    print(f"eval: {len(rows)} prompts from {data or 'the hub'} ({args.split}), up to {tokens} new tokens, greedy")
    results = []
    if args.baseline:
        baseline = load_for_inference(args.baseline)
        results.append(evaluate(baseline.model, baseline.tokenizer, recipe, rows, sampling, "baseline"))
    results += compare(recipe, rows, load_for_inference(args.model, args.adapter), sampling)
    print(format_table(results))
    source = Path(args.adapter or args.model or ".")
    name = f"eval-{source.name}-{args.split}.json"  # OUT/eval.json is the training run's before/after
    path = Path(args.json) if args.json else (source.parent / name if source.is_dir() else Path(name))
    write_json(path, results, recipe=recipe.name, split=args.split, max_new_tokens=tokens)
    print(f"eval: results in {path}")
    return 0


def at_least_one(value: int, flag: str, meaning: str) -> None:
    """Checked here, before any loading: a count below 1 otherwise ends in a pydantic traceback."""
    if value < 1:
        raise KitError(f"{flag} {value}: must be 1 or more ({meaning})")


def chat_command(args: argparse.Namespace) -> int:
    from kit.eval.chat import chat_loop

    return chat_loop(args)


def close_progress_bars() -> None:
    """A bar the failing step left open (the trainer's) would end its line with our error: finish it first."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", [])):
        bar.close()


def main(argv: list[str] | None = None) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # the kit's lines stay in order with progress bars on stderr
    parser = build_parser()
    # Overrides may come after options (`--out x grpo.beta=0.04`), which argparse leaves unparsed.
    args, rest = parser.parse_known_args(argv)
    unknown = [item for item in rest if item.startswith("-") or "=" not in item]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if rest and args.command not in ("train", "plan"):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.overrides = [*getattr(args, "overrides", []), *rest]
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: a multi-process run passes it on
    try:
        commands = {"train": train_command, "export": export_command, "rewards": rewards_command,
                    "eval": eval_command, "chat": chat_command, "plan": plan_command}
        return commands[args.command](args)
    except KitError as err:
        close_progress_bars()
        print(f"error: {err}", file=sys.stderr)
        ranks.record_failure(err)  # in a rank of a multi-process run, the launcher reports it
        return 2
    except Exception as err:
        ranks.record_failure(err)
        if is_disk_full(err):  # anywhere the kit does not guard itself (run.yaml, eval.json, GGUF files)
            close_progress_bars()
            print(f"error: {disk_full_error('files', Path.cwd(), err=err)}", file=sys.stderr)
            return 2
        raise
