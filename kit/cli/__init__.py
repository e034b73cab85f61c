"""The command line: `python -m kit train RECIPE ...` (the Makefile's targets call this).

    python -m kit train gsm8k                                  # smoke run without a GPU, full with one
    python -m kit train gsm8k --model unsloth/Qwen2.5-3B-Instruct --steps 500 --out runs/q3b
    python -m kit train ./my_recipe.py --config my.yaml grpo.learning_rate=1e-5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kit.cli.parser import build_parser, reward_model_options
from kit.diskspace import disk_full_error, is_disk_full
from kit.errors import KitError
from kit.train.launch.failures import record_failure
from kit.user_code import print_traceback
from kit.verbosity import quiet_libraries, set_verbose

# What a Ctrl-C outside training leaves, by command: folders are written under temporary names and renamed
# when complete (kit.atomic), GGUF files are moved into place only once every one asked for is made.
NOTHING_LEFT = "nothing half-written was left; run the same command again"
AFTER_CTRL_C = {
    "train": ("the folders it was writing (adapter, merged) are left out, not half-written; run the same command "
              "with --resume (make train RESUME=1) to continue from the run's last checkpoint"),
    "export": ("no GGUF file is left half-written; any already in place were not verified yet: run the same command "
               "with --overwrite"),
}


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
    layer: dict = {"recipe": args.recipe} if args.recipe else {}
    for (section, key), value in flags.items():
        if value is not None:
            layer.setdefault(section, {})[key] = value
    if getattr(args, "out", None):
        layer["output_dir"] = args.out
    if args.profile:
        layer["profile"] = args.profile
    return deep_merge(layer, parse_overrides(args.overrides))


def train_command(args: argparse.Namespace) -> int:
    from kit.train.start import TrainRequest, start_training

    if args.recipe and "=" in args.recipe and not Path(args.recipe).exists():  # `kit train --config F key=value`
        args.overrides, args.recipe = [args.recipe, *args.overrides], None
    return start_training(TrainRequest(args.recipe, cli_layer(args), config_file=args.config, out=args.out,
                                       resume=args.resume, plan_gpu=args.gpu, skip_plan=args.skip_plan,
                                       argv=tuple(args.argv[1:])))


def check_command(args: argparse.Namespace) -> int:
    """The learnability check alone (kit.train.check): its verdict printed; exit 0, as training only warns."""
    from kit.recipes import load_recipe
    from kit.train.check import check_command as check
    from kit.train.start import TrainRequest

    if args.recipe and "=" in args.recipe and not Path(args.recipe).exists():  # `kit check --config F key=value`
        args.overrides, args.recipe = [args.recipe, *args.overrides], None
    request = TrainRequest(args.recipe, cli_layer(args), config_file=args.config)
    spec = args.recipe or (read_config_recipe(args.config) if args.config else None)
    if not spec:
        raise KitError("which recipe? give one (kit check gsm8k), or a --config file that names it (recipe: ...)")
    check(request, load_recipe(spec, check_tools=False))
    return 0


def read_config_recipe(config_file: str) -> str | None:
    from kit.config import read_yaml

    return read_yaml(config_file).get("recipe")


def plan_command(args: argparse.Namespace) -> int:
    from kit.config import read_yaml
    from kit.plan.planner import NO_FIT
    from kit.plan.preflight import plan_page
    from kit.recipes import load_recipe

    recipe = load_recipe(args.recipe)
    cfg = recipe.config(read_yaml(args.config) if args.config else {}, cli_layer(args), gpu=True)
    text, plan = plan_page(cfg, args.gpu, args.stack, recipe.rewards, args.image_size or recipe.picture_size)
    print(text)
    return 1 if plan.verdict == NO_FIT else 0


def export_command(args: argparse.Namespace) -> int:
    from kit.export.gguf.export import export_gguf
    from kit.outputs import VERIFICATION

    result = export_gguf(Path(args.model_dir), args.quant, Path(args.out) if args.out else None, args.name,
                         check=not args.no_verify, overwrite=args.overwrite)
    for path in result.files:
        print(f"  {path}")
    print(f"  {result.modelfile}  (ollama create NAME -f {result.modelfile})")
    if not result.ok:
        print(f"error: a required check failed for at least one file (see the table above and {VERIFICATION})",
              file=sys.stderr)
        return 1
    return 0


def rewards_command(args: argparse.Namespace) -> int:
    """The rewards on sample completions (--completions, else the recipe's own), then the gold-answer check on
    training rows (--data, else the recipe's sample data): exit 1 on anything training would stop on."""
    from kit.checks.model_rewards import prepare_model_rewards
    from kit.checks.rewards_check import load_samples, print_report, run_bundle
    from kit.recipes import load_recipe

    recipe = load_recipe(args.recipe)
    refused = False
    settings = recipe.config({}, {}, gpu=False)  # the recipe's judge and reward model settings (DEFAULTS)
    models = {**settings.reward_models, **reward_model_options(args.reward_models)}
    prepare_model_rewards(recipe.rewards.funcs, settings.judge, models)  # a dead endpoint: one line, here too
    if args.completions or recipe.sample_completions or not (args.data or recipe.write_sample):
        samples = load_samples(args.completions, recipe.sample_completions, recipe.name)
        runs = run_bundle(recipe.rewards, samples, recipe.toolbox)
        print_report(runs, samples)
        refused = any(run.refusals for run in runs)  # what training would stop on
    refused = not judges_calibrated(recipe, settings.judge) or refused
    return 1 if check_gold_answers_of(recipe, args.data) or refused else 0


def judges_calibrated(recipe, judge) -> bool:
    """The judge calibration training runs first (kit.checks.judge_calibration), after the report; False when
    training would refuse to start."""
    from kit.checks.judge_calibration import calibrate_judges

    try:
        calibrate_judges(recipe.rewards.funcs, recipe.judge_calibration, judge.calibration)
    except KitError as err:
        print(f"error: {err}")
        return False
    return True


def check_gold_answers_of(recipe, data: str | None) -> bool:
    """The gold-answer check training runs first (kit.checks.gold_answers), on the rows of `data` or the recipe's
    sample; True when training would refuse to start."""
    from kit.checks.gold_answers import check_gold_answers
    from kit.config import SAMPLE_DATA, DataConfig
    from kit.data import load_rows

    if not (data or recipe.write_sample):
        print("gold answers: not checked: the recipe ships no sample data; pass --data FILE (its training rows)")
        return False
    gold = check_gold_answers(recipe, load_rows(recipe, DataConfig(path=data or SAMPLE_DATA)), recipe.rewards)
    print(gold.summary)
    for warning in gold.warnings:
        print(f"warning: {warning}")
    if gold.problem:
        print(f"error: {gold.problem}")
    return gold.problem is not None


def eval_command(args: argparse.Namespace) -> int:
    from kit.eval.command import evaluate_command
    from kit.recipes import load_recipe

    evaluate_command(load_recipe(args.recipe), args.model, args.adapter, args.baseline, args.split, args.n,
                     args.data, args.max_new_tokens, args.json, args.backend,
                     reward_models=reward_model_options(args.reward_models))
    return 0


def push_command(args: argparse.Namespace) -> int:
    from kit.export.hub import TOKEN_NAME, hub_token, push_run

    token = hub_token()
    if not token:
        raise KitError(f"no hub token: set {TOKEN_NAME} to a token with write access, or run `hf auth login`")
    print(push_run(Path(args.out), args.repo, token, private=args.private))
    return 0


def doctor_command(args: argparse.Namespace) -> int:
    from kit.doctor.doctor import run_doctor

    if args.steps < 1:
        raise KitError("--steps must be at least 1")
    return run_doctor(Path(args.out) if args.out else None, args.steps)


def recipes_command(args: argparse.Namespace) -> int:
    from kit.cli.recipes import copy_recipe, list_recipes

    return copy_recipe(args.name, args.destination) if args.recipes_command == "copy" else list_recipes()


def chat_command(args: argparse.Namespace) -> int:
    from kit.eval.chat import chat_loop, chat_recipe
    from kit.recipes import load_recipe

    name = chat_recipe(args)
    return chat_loop(args, load_recipe(name) if name else None)


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
    if rest and args.command not in ("train", "plan", "check"):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.overrides = [*getattr(args, "overrides", []), *rest]
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: a multi-process run passes it on
    set_verbose(getattr(args, "verbose", False))
    quiet_libraries()  # before any command imports torch, torchao or bitsandbytes; -v shows them
    try:
        commands = {"train": train_command, "check": check_command, "export": export_command,
                    "rewards": rewards_command, "eval": eval_command, "chat": chat_command, "plan": plan_command,
                    "push": push_command, "doctor": doctor_command, "recipes": recipes_command}
        return commands[args.command](args)
    except KitError as err:
        close_progress_bars()
        print_traceback(err)  # with -v, where in the recipe's own code it failed
        print(f"error: {err}", file=sys.stderr)
        record_failure(err)  # in a rank of a multi-process run, the launcher reports it
        return 2
    except KeyboardInterrupt:  # outside training, where the first Ctrl-C saves a checkpoint (kit.train.resume)
        close_progress_bars()
        print(f"error: interrupted (Ctrl-C) during kit {args.command}; {AFTER_CTRL_C.get(args.command, NOTHING_LEFT)}",
              file=sys.stderr)
        return 130
    except Exception as err:
        record_failure(err)
        if is_disk_full(err):  # anywhere the kit does not guard itself (run.yaml, eval.json, GGUF files)
            close_progress_bars()
            print(f"error: {disk_full_error('files', Path.cwd(), err=err)}", file=sys.stderr)
            return 2
        raise
