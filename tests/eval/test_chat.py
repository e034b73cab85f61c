"""`python -m kit chat`, driven through the CLI with typed lines on a fake stdin; the model loader and the
generator are stand-ins that record what chat hands them and answer "reply 1", "reply 2", ..."""

import io
import sys
from dataclasses import dataclass, field

import pytest

from kit.cli import main
from kit.models.generate import Sampling
from kit.models.inference import Loaded
from kit.recipes import load_recipe

GSM8K_SYSTEM = load_recipe("gsm8k").system_prompt


@dataclass
class Session:
    code: int
    prompts: list[list[dict]]  # the messages of each call to generate, in order
    out: str
    err: str
    loads: list[tuple] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)


def chat(monkeypatch, capsys, typed: str | None, *options: str, closed: bool = False) -> Session:
    """Run `python -m kit chat merged OPTIONS` with `typed` as stdin (None: no stdin at all)."""
    loaded = Loaded(model="the model", tokenizer="its tokenizer", lora_request="its adapter")
    loads, calls = [], []

    def load_for_inference(model, adapter=None, backend="auto", new_tokens=256):
        loads.append((model, adapter))
        return loaded

    def generate(model, tokenizer, prompts, sampling, **options):
        assert (model, tokenizer) == (loaded.model, loaded.tokenizer), "generate got something other than the load"
        calls.append({"prompts": [[dict(m) for m in p] for p in prompts], "sampling": sampling, **options})
        return [f"reply {len(calls)}" for _ in prompts]

    monkeypatch.setattr("kit.eval.chat.load_for_inference", load_for_inference)
    monkeypatch.setattr("kit.eval.chat.generate", generate)
    stdin = None if typed is None else io.StringIO(typed)
    if closed:
        stdin.close()
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["chat", "merged", *options])
    captured = capsys.readouterr()
    for call in calls:
        assert len(call["prompts"]) == 1, "chat sends one conversation per call"
    return Session(code, [call["prompts"][0] for call in calls], captured.out, captured.err, loads, calls)


def test_the_recipe_system_prompt_opens_every_prompt(monkeypatch, capsys):
    session = chat(monkeypatch, capsys, "What is 2 plus 3?\nAnd 4 plus 4?\n")
    assert [p[0] for p in session.prompts] == [{"role": "system", "content": GSM8K_SYSTEM}] * 2
    assert f"system: {GSM8K_SYSTEM}" in session.out


def test_system_option_replaces_the_recipe_prompt(monkeypatch, capsys):
    session = chat(monkeypatch, capsys, "Bonjour\n", "--system", "Answer in French.")
    assert session.prompts == [[{"role": "system", "content": "Answer in French."},
                                {"role": "user", "content": "Bonjour"}]]
    assert GSM8K_SYSTEM not in session.out


def test_a_recipe_without_a_system_prompt_sends_the_conversation_alone(monkeypatch, capsys):
    session = chat(monkeypatch, capsys, "12 + 30\n", "--recipe", "addition")
    assert session.prompts == [[{"role": "user", "content": "12 + 30"}]]
    assert "system:" not in session.out


def test_the_conversation_is_kept_across_turns(monkeypatch, capsys):
    session = chat(monkeypatch, capsys, "first\n  second  \nthird\n", "--system", "S")
    assert session.prompts[-1] == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "reply 1"},
        {"role": "user", "content": "second"}, {"role": "assistant", "content": "reply 2"},
        {"role": "user", "content": "third"}]
    assert [len(p) for p in session.prompts] == [2, 4, 6]
    assert [line for line in session.out.split("you> ") if line.startswith("model> ")] == [
        "model> reply 1\n", "model> reply 2\n", "model> reply 3\n"]


def test_reset_starts_over_and_keeps_the_system_prompt(monkeypatch, capsys):
    session = chat(monkeypatch, capsys, "first\n/reset\nsecond\n", "--system", "S")
    assert session.prompts[-1] == [{"role": "system", "content": "S"}, {"role": "user", "content": "second"}]


@pytest.mark.parametrize("options", [(), ("--system", "S"), ("--recipe", "addition")])
def test_every_prompt_is_a_chat_conversation_ending_with_the_user(monkeypatch, capsys, options):
    session = chat(monkeypatch, capsys, "one\ntwo\n/reset\nthree\n", *options)
    assert len(session.prompts) == 3
    for messages in session.prompts:
        assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) and m["content"]
                   for m in messages), messages
        turns = [m["role"] for m in messages if m["role"] != "system"]
        assert [m["role"] for m in messages[:len(messages) - len(turns)]] in ([], ["system"])  # system first only
        assert turns == ["user", "assistant"] * (len(turns) // 2) + ["user"], messages


@pytest.mark.parametrize("typed, sent", [
    ("", []),  # Ctrl-D at the first prompt
    ("hello\n", ["hello"]),  # the input ends after one turn
    ("hello", ["hello"]),  # ... without a final newline
    ("hello\n/exit\nnot sent\n", ["hello"]),
    ("\n   \n\t\nhello\n\n", ["hello"]),  # blank lines are skipped, not sent
])
def test_leaving_ends_with_exit_code_zero(monkeypatch, capsys, typed, sent):
    session = chat(monkeypatch, capsys, typed)
    assert session.code == 0 and session.err == ""
    assert [p[-1]["content"] for p in session.prompts] == sent


@pytest.mark.parametrize("typed, closed", [(None, False), ("hello\n", True)])
def test_closed_stdin_is_refused_in_one_line_before_the_model_loads(monkeypatch, capsys, typed, closed):
    session = chat(monkeypatch, capsys, typed, closed=closed)
    assert session.code == 2 and session.loads == [] and session.prompts == []
    assert session.err.startswith("error: chat reads your messages from stdin, which is closed; run it in a terminal")
    assert len(session.err.splitlines()) == 1


def test_options_reach_the_loader_and_the_generator(monkeypatch, capsys):
    session = chat(monkeypatch, capsys, "hi\n", "--adapter", "run/adapter", "--max-new-tokens", "32",
                   "--temperature", "0.7")
    assert session.loads == [("merged", "run/adapter")]
    [call] = session.calls
    assert call["sampling"] == Sampling(max_new_tokens=32, temperature=0.7)
    assert call["lora_request"] == "its adapter" and call["progress"] is False  # no progress bar in a chat


def test_a_model_from_a_run_gets_that_runs_system_prompt(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)  # chat() opens "merged": tmp_path/merged, with tmp_path/run.yaml beside it
    (tmp_path / "merged").mkdir()
    (tmp_path / "run.yaml").write_text("recipe: math_think\ndata:\n  system_prompt: null\n")
    session = chat(monkeypatch, capsys, "1+1?\n")
    assert session.prompts[0][0] == {"role": "system", "content": load_recipe("math_think").system_prompt}
    (tmp_path / "run.yaml").write_text("recipe: addition\ndata:\n  system_prompt: Reply with <answer>N</answer>.\n")
    assert chat(monkeypatch, capsys, "1+1?\n").prompts[0][0]["content"] == "Reply with <answer>N</answer>."
    assert chat(monkeypatch, capsys, "1+1?\n", "--recipe", "gsm8k").prompts[0][0]["content"] == GSM8K_SYSTEM


@pytest.mark.parametrize("reply", [
    '<tool_call>{"name": "\\ud800", "arguments": {}}</tool_call>',  # the red team's surrogate name
    '<tool_call>{"name": "python", "arguments": {"code": ' + "[" * 1500,  # past the recursion limit
    '<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call>' * 40,  # a flood
])
def test_kit_chat_with_tools_survives_the_red_teams_replies(monkeypatch, capsys, tool_tokenizer, reply):
    from kit.eval import rollout

    loaded = Loaded(model="the model", tokenizer=tool_tokenizer, lora_request=None)
    replies = iter([reply])

    def generate_ids(model, tokenizer, prompt_ids, sampling, batch_size, lora_request, progress):
        text = next(replies, "<answer>6</answer>")
        return [tokenizer(text, add_special_tokens=False).input_ids + [tokenizer.eos_token_id] for _ in prompt_ids]

    monkeypatch.setattr("kit.eval.chat.load_for_inference", lambda *a, **k: loaded)
    monkeypatch.setattr(rollout, "generate_ids", generate_ids)
    monkeypatch.setattr(sys, "stdin", io.StringIO("What is 2 times 3?\n/exit\n"))
    assert main(["chat", "merged", "--recipe", "python_tool", "--max-new-tokens", "20000"]) == 0
    out = capsys.readouterr().out
    assert "model> " in out and "Traceback" not in out
    if reply.count("<tool_call>") == 40:
        assert "tool budget spent" in out
