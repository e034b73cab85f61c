"""`python -m kit chat MODEL`: try a model by hand in a plain terminal, with the recipe's system prompt.

Commands at the prompt: /reset starts over, /exit (or Ctrl-D) leaves. With --image PATH (a vision-language model)
the picture is shown with the first message of the conversation.
"""

from __future__ import annotations

import argparse
import math
import sys

from kit import cpu_threads
from kit.errors import KitError
from kit.eval.command import at_least_one
from kit.models.generate import Sampling, generate
from kit.models.inference import load_for_inference
from kit.models.vision_generate import generate_with_images
from kit.models.vision_models import is_processor
from kit.recipe import Recipe
from kit.tools.stats import transcript_text

DEFAULT_RECIPE = "gsm8k"  # for a model that no kit run made


def chat_recipe(args: argparse.Namespace) -> str | None:
    """The recipe whose system prompt the chat starts with: --recipe, else the run's own (OUT/run.yaml beside the
    model), else gsm8k's; None when --system or the run's data.system_prompt says the prompt instead."""
    if args.system:
        return None
    from kit.eval.command import run_context

    run = run_context(args.model, args.adapter)
    if args.recipe is None and (run.get("data") or {}).get("system_prompt"):
        return None
    return args.recipe or run.get("recipe") or DEFAULT_RECIPE


def system_prompt(args: argparse.Namespace, recipe: Recipe | None) -> str | None:
    """--system, else the run's data.system_prompt, else the recipe's (chosen by chat_recipe)."""
    if args.system:
        return args.system
    if recipe is None:
        from kit.eval.command import run_context

        return run_context(args.model, args.adapter)["data"]["system_prompt"]
    return recipe.system_prompt


def require_stdin() -> None:
    """With stdin closed (`kit chat MODEL <&-`, some job runners) Python has no sys.stdin and input() fails."""
    if sys.stdin is None or sys.stdin.closed:
        raise KitError("chat reads your messages from stdin, which is closed; run it in a terminal, "
                       "or pipe the messages in: echo 'What is 2 plus 3?' | python -m kit chat MODEL")


def check_numbers(max_new_tokens: int, temperature: float) -> None:
    """Before loading: transformers would fail on them with a traceback at the first message."""
    at_least_one(max_new_tokens, "--max-new-tokens", "the longest answer, in tokens")
    if not math.isfinite(temperature) or temperature < 0:
        raise KitError(f"--temperature {temperature}: must be 0 (greedy) or more")


def chat_loop(args: argparse.Namespace, recipe: Recipe | None) -> int:
    """`recipe`: the one chat_recipe(args) names, loaded by the caller (None: no recipe is needed)."""
    check_numbers(args.max_new_tokens, args.temperature)
    require_stdin()  # before loading the model: that can take minutes
    cpu_threads.start()
    picture = opened_picture(args.image) if getattr(args, "image", None) else None
    loaded = load_for_inference(args.model, args.adapter, backend=args.backend, new_tokens=args.max_new_tokens)
    if picture is not None and not is_processor(loaded.tokenizer):
        raise KitError(f"--image: {args.model or args.adapter} is a text model, which cannot see a picture; "
                       "chat with a vision-language model (a count_shapes run's OUT/merged, say)")
    system = system_prompt(args, recipe)
    sampling = Sampling(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    history: list[dict] = []
    print("chat: type a message; /reset starts over, /exit leaves" + (f"\nsystem: {system}" if system else ""))
    if picture is not None:
        print(f"chat: the model sees {args.image} ({picture.width}x{picture.height}) with your first message")
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            print()
            return 0
        if line == "/exit":
            return 0
        if line == "/reset":
            history = []
            continue
        if not line:
            continue
        history.append({"role": "user", "content": line})
        messages = ([{"role": "system", "content": system}] if system else []) + history
        if recipe is not None and recipe.toolbox:
            turns = tool_turns(loaded, recipe, messages, sampling)
            history += turns
            for turn in turns:
                print(f"{'tool' if turn['role'] == 'tool' else 'model'}> {transcript_text([turn])}")
            continue
        if picture is not None:  # shown with the first message, as training shows a row's picture
            reply = generate_with_images(loaded.model, loaded.tokenizer, [messages], [[picture]], sampling,
                                         progress=False)[0]
        else:
            reply = generate(loaded.model, loaded.tokenizer, [messages], sampling, lora_request=loaded.lora_request,
                             progress=False)[0]
        history.append({"role": "assistant", "content": reply})
        print(f"model> {reply}")


def opened_picture(path: str):
    """--image, read before the model loads: a path that is not a picture is one line, not a traceback later."""
    from pathlib import Path

    from PIL import Image

    from kit.data.images import image_problem

    if problem := image_problem(Path(path).expanduser()):
        raise KitError(f"--image: {problem}")
    return Image.open(Path(path).expanduser()).convert("RGB")


def tool_turns(loaded, recipe: Recipe, messages: list[dict], sampling: Sampling) -> list[dict]:
    """The model's turns for the latest message, its tool calls run as in training (kit.eval.rollout)."""
    from kit.eval.rollout import roll_out
    from kit.tools.template import use_tool_template

    if note := use_tool_template(loaded.tokenizer, "the model"):
        print(note)
    rollout = roll_out(loaded.model, loaded.tokenizer, [{"prompt": messages}], recipe.toolbox, sampling,
                       sampling.max_tool_rounds, lora_request=loaded.lora_request, progress=False)[0]
    return rollout.messages
