"""Asking an OpenAI-compatible endpoint many questions at once, cheaply and without falling over.

    client = JudgeClient(JudgeConfig(base_url=..., model=...))
    replies = client.ask_all([messages, ...])     # one Reply per request, in order: text, or the error

Requests go through the `openai` library on a thread pool of `concurrency`. Each is tried `1 + retries` times
with backoff on the errors a retry can fix (no connection, timeout, rate limit, a 5xx); a 4xx other than 429
(a wrong model name, a bad key) is not retried. Answers are cached by the request's digest, so a completion a
group repeats, or one seen in an earlier step, is not paid for twice; failures are not cached. While the
endpoint is down (the last request failed to connect) a request is tried once, so an outage costs a step
seconds, not minutes.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kit.config.judging import JudgeConfig
from kit.errors import KitError

CACHE_SIZE = 50_000  # judgements kept; a few MB of text
BACKOFF_S = 0.5  # the first retry's wait; each later one doubles it
NO_KEY = "not-needed"  # the openai client insists on some key; local servers ignore it


@dataclass(frozen=True)
class Reply:
    text: str | None  # the judge's reply, or None when it failed
    error: str | None = None  # why it failed, in one line (never the API key)
    cached: bool = False


class JudgeClient:
    def __init__(self, settings: JudgeConfig, max_tokens: int = 32, temperature: float = 0.0,
                 response_format: dict | None = None):
        self.settings, self.max_tokens, self.temperature = settings, max_tokens, temperature
        self.extra = {"response_format": response_format} if response_format else {}
        self.cache: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()
        self.down = False  # the last request could not reach the endpoint
        self._client = None

    @property
    def client(self):
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(base_url=self.settings.base_url, api_key=api_key(self.settings),
                                  timeout=self.settings.timeout_s, max_retries=0)  # retries are counted here
        return self._client

    def check_reachable(self) -> None:
        """Before training: the endpoint answers and serves the model, or one line naming the URL."""
        import openai

        url, model = self.settings.base_url, self.settings.model
        try:
            served = [m.id for m in self.client.models.list()]
        except openai.APIConnectionError as err:
            raise KitError(f"the judge's endpoint {url} did not answer ({one_line(err)}): start the server (make "
                           "judge-server serves SmolLM2 there) or point judge.base_url at yours") from None
        except openai.APIStatusError as err:
            raise KitError(f"the judge's endpoint {url} refused: {one_line(err)}; check judge.base_url and "
                           "judge.api_key_env") from None
        if served and model not in served:
            shown = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
            raise KitError(f"the judge's endpoint {url} does not serve the model '{model}'; it serves: {shown}. "
                           "Set judge.model to one of them")

    def ask_all(self, requests: list[list[dict]]) -> list[Reply]:
        """A Reply per request, in order; each distinct uncached request asked once."""
        keys = [self.key(r) for r in requests]
        replies: dict[str, Reply] = {}
        for key in keys:
            with self.lock:
                if key in self.cache:
                    self.cache.move_to_end(key)
                    replies[key] = Reply(self.cache[key], cached=True)
        todo = {key: request for key, request in zip(keys, requests) if key not in replies}
        if todo:
            with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
                for key, reply in zip(todo, pool.map(self.ask, todo.values())):
                    replies[key] = reply
        return [replies[key] for key in keys]

    def ask(self, messages: list[dict]) -> Reply:
        import openai

        tries = 1 if self.down else 1 + self.settings.retries
        error = "not asked"
        for attempt in range(tries):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            try:
                response = self.client.chat.completions.create(
                    model=self.settings.model, messages=messages, max_tokens=self.max_tokens,
                    temperature=self.temperature, **self.extra)
            except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                    openai.InternalServerError) as err:
                error, self.down = one_line(err), isinstance(err, openai.APIConnectionError)
                continue
            except openai.APIError as err:  # a 4xx: the same request fails the same way again
                return Reply(None, one_line(err))
            self.down = False
            text = (response.choices[0].message.content or "") if response.choices else ""
            self.remember(self.key(messages), text)
            return Reply(text)
        return Reply(None, error)

    def key(self, messages: list[dict]) -> str:
        return request_key([self.settings.model, self.extra, messages])

    def remember(self, key: str, text: str) -> None:
        with self.lock:
            self.cache[key] = text
            while len(self.cache) > CACHE_SIZE:
                self.cache.popitem(last=False)


def api_key(settings: JudgeConfig) -> str:
    """The key from the environment variable the settings name; NO_KEY when they name none."""
    if settings.api_key_env is None:
        return NO_KEY
    key = os.environ.get(settings.api_key_env)
    if not key:
        raise KitError(f"judge.api_key_env names {settings.api_key_env}, which is not set: export "
                       f"{settings.api_key_env}=... before the run (the kit reads the key only from there)")
    return key


def request_key(request: list) -> str:
    text = json.dumps(request, ensure_ascii=True, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def one_line(err: Exception) -> str:
    cause = err.__cause__ or err.__context__
    text = f"{err}" + (f": {cause}" if cause and str(cause) not in str(err) else "")
    return " ".join(text.split())[:200]
