"""A reward scored by a chat model behind any OpenAI-compatible endpoint: an LLM judge.

    from kit.rewards import llm_judge
    helpful = llm_judge("Question: {prompt}\\nReference: {answer}\\nResponse: {completion}\\n"
                        "Rate how helpful and concise the response is, 0-10.", name="helpful")
    REWARDS = RewardBundle((helpful, 1.0), ...)

The rubric is a template: `{prompt}`, `{completion}` and any dataset column by name (`{answer}`), which the
kit then checks the data has, as for any reward. The reply is parsed to a score in [0, 1]: the `SCORE: n` line
of an integer scale (`scale=10`), or a JSON field (`json_field="score"`). Where the endpoint is, its model, key
variable, timeout, retries and concurrency are the run's `judge:` settings (kit/config/judging.py); arguments
given here win over them.

A judgement that fails (no answer after the retries, or a reply without a score) is None, "does not apply":
TRL leaves it out of the judge's mean, and the completion keeps its other rewards. The health check counts
failures (judge/<name>/failed) and stops the run when they persist (judge.max_failed). How the completion is
kept from talking the judge into a score: kit/rewards/judge/prompt.py.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass

from kit.config.judging import JudgeConfig
from kit.rewards.judge.client import JudgeClient, Reply
from kit.rewards.judge.prompt import addresses_grader, judge_messages, parse_score, rubric_fields
from kit.rewards.text import completion_text


@dataclass(frozen=True)
class Judgement:
    score: float | None
    reply: str | None = None  # the judge's raw reply (kit rewards check prints it)
    error: str | None = None  # why there is no score
    screened: str | None = None  # the text that addressed a grader: scored 0 unasked
    cached: bool = False


class LLMJudge:
    """The reward function itself: TRL's signature, the rubric's columns as required arguments."""

    reward_range = (0.0, 1.0)
    row_optional = True  # a batch the endpoint never answered is None throughout; the health check watches that

    def __init__(self, rubric: str, name: str, scale: int, json_field: str | None, max_tokens: int,
                 given: dict):
        self.rubric, self.scale, self.json_field, self.max_tokens = rubric, scale, json_field, max_tokens
        self.columns = [f for f in rubric_fields(rubric) if f not in ("prompt", "completion")]
        self.given = given  # settings passed to llm_judge itself: they win over the run's
        self.__name__ = name
        keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
        self.__signature__ = inspect.Signature(
            [inspect.Parameter("prompts", keyword), inspect.Parameter("completions", keyword),
             *(inspect.Parameter(c, keyword) for c in self.columns),
             inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
        self.configure(JudgeConfig())
        self.last: list[Judgement] = []  # the latest batch's judgements
        self.totals = {"judged": 0, "failed": 0, "unparsed": 0, "screened": 0, "cached": 0}
        self.outage = False  # the latest batch had judgements the endpoint never answered

    def configure(self, settings: JudgeConfig) -> None:
        """Take the run's `judge:` settings (what llm_judge was given stays)."""
        self.settings = settings.model_copy(update=self.given)
        self.client = JudgeClient(self.settings, self.max_tokens, response_format=reply_format(
            self.settings.response_format, self.json_field, self.scale))

    @property
    def source(self) -> dict:
        """What run.yaml records: where the score comes from. The key's variable name, never the key."""
        s = self.settings
        return {"kind": "llm_judge", "model": s.model, "base_url": s.base_url, "api_key_env": s.api_key_env,
                "scale": self.scale, "json_field": self.json_field, "rubric": self.rubric}

    def preflight(self) -> None:
        self.client.check_reachable()

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        started = time.monotonic()
        rows = [{c: kwargs[c][i] for c in self.columns} for i in range(len(completions))]
        self.last = self.judge(prompts, completions, rows)
        self.log(self.last, kwargs.get("log_metric"), time.monotonic() - started)
        return [j.score for j in self.last]

    def judge(self, prompts, completions, rows: list[dict]) -> list[Judgement]:
        texts = [completion_text(c) for c in completions]
        screened = {i: found for i, text in enumerate(texts) if (found := addresses_grader(text))}
        asked = [i for i, text in enumerate(texts) if text.strip() and i not in screened]
        requests = [judge_messages(self.rubric, prompt_text(prompts[i]), texts[i], rows[i], self.scale,
                                   self.json_field) for i in asked]
        replies = dict(zip(asked, self.client.ask_all(requests)))
        return [Judgement(0.0, screened=screened[i]) if i in screened
                else self.scored(replies[i]) if i in replies
                else Judgement(0.0, error="empty completion") for i in range(len(texts))]

    def scored(self, reply: Reply) -> Judgement:
        if reply.text is None:
            return Judgement(None, error=reply.error)
        score = parse_score(reply.text, self.scale, self.json_field)
        error = None if score is not None else "the reply holds no score in range"
        return Judgement(score, reply.text, error, cached=reply.cached)

    def log(self, judgements: list[Judgement], log_metric, seconds: float) -> None:
        """judge/<name>/... metrics for this batch, the running totals, and a line when the endpoint goes down."""
        count = max(len(judgements), 1)
        failed = sum(j.score is None for j in judgements)
        unparsed = sum(j.score is None and j.reply is not None for j in judgements)
        batch = {"failed": failed, "unparsed": unparsed, "screened": sum(j.screened is not None for j in judgements),
                 "cached": sum(j.cached for j in judgements)}
        self.totals["judged"] += len(judgements)
        for key, value in batch.items():
            self.totals[key] += value
        if log_metric is not None:
            for key, value in batch.items():
                log_metric(f"judge/{self.__name__}/{key}", value / count)
            log_metric(f"judge/{self.__name__}/seconds", seconds)
        self.say_outage(judgements)

    def say_outage(self, judgements: list[Judgement]) -> None:
        errors = [j.error for j in judgements if j.score is None and j.reply is None]
        if errors and not self.outage:
            notice(f"judge {self.__name__}: {len(errors)} of {len(judgements)} judgements failed ({errors[0]}); "
                   f"they score None (does not apply) and the run goes on; endpoint {self.settings.base_url}")
        elif not errors and self.outage:
            notice(f"judge {self.__name__}: the endpoint answers again")
        self.outage = bool(errors)


def llm_judge(rubric: str, model: str | None = None, base_url: str | None = None, *, name: str = "judge",
              scale: int = 10, json_field: str | None = None, max_tokens: int | None = None,
              **settings) -> LLMJudge:
    """A reward scored by the chat model `model` at `base_url` (None: the run's judge.model / judge.base_url).

    settings: any other `judge:` setting for this judge alone (api_key_env, timeout_s, retries, concurrency).
    max_tokens: the judge's reply length; None: 32 for a score line, 128 for JSON with a reason.
    """
    given = {k: v for k, v in {"model": model, "base_url": base_url, **settings}.items() if v is not None}
    JudgeConfig(**given)  # an unknown or invalid setting fails here, in the recipe's import
    tokens = max_tokens or (128 if json_field else 32)
    return LLMJudge(rubric, name, scale, json_field, tokens, given)


def reply_format(kind: str, json_field: str | None, scale: int) -> dict | None:
    """The request's response_format: a JSON object whose `json_field` is an integer 0..scale, in the form the
    endpoint takes (llama.cpp's server turns the schema into a grammar, so even a small judge answers in it)."""
    if kind == "text" or json_field is None:
        return None
    schema = {"type": "object", "properties": {json_field: {"type": "integer", "enum": list(range(scale + 1))}},
              "required": [json_field]}
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "judgement", "schema": schema}}


def prompt_text(prompt) -> str:
    """A chat prompt as the judge reads it: the user's message, or the conversation without its system message."""
    if not isinstance(prompt, list):
        return str(prompt)
    turns = [m for m in prompt if isinstance(m, dict) and m.get("role") != "system"]
    if len(turns) == 1:
        return completion_text([turns[0]])
    return "\n\n".join(f"{m.get('role')}: {completion_text([m])}" for m in turns)


def notice(line: str) -> None:
    """A line of its own above the trainer's progress bar."""
    from tqdm.auto import tqdm

    tqdm.write(line)


def configure_judges(funcs, settings: JudgeConfig) -> None:
    """Give every LLM judge among these rewards (inside the kit's wrappers) the run's `judge:` settings."""
    from kit.rewards.traits import unwrapped

    for fn in funcs:
        inner = unwrapped(fn)
        if isinstance(inner, LLMJudge):
            inner.configure(settings)


def judgement_lines(name: str, judgements: list[Judgement], labels: list[str]) -> list[str]:
    """A judge's raw reply to each sample (`kit rewards check`): what it said, and the score the kit read."""
    lines = [f"judge {name}: its replies"]
    for i, (label, j) in enumerate(zip(labels, judgements)):
        score = "None" if j.score is None else f"{j.score:.3g}"
        said = (f"screened, not asked: it writes to the grader ({j.screened!r})" if j.screened is not None
                else f"reply {j.reply!r:.160}" if j.reply is not None else f"no reply: {j.error}")
        problem = f" ({j.error})" if j.reply is not None and j.error else ""
        lines.append(f"  {i + 1} {label!r}: score {score}{problem}; {said}")
    return lines
