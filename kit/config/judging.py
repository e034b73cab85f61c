"""The settings of rewards scored by a model behind an OpenAI-compatible endpoint (read by kit.rewards.judge).

A recipe writes `llm_judge(RUBRIC)`; where the judge lives and how hard to try it is a setting, so the same
recipe trains against `make judge-server` on a laptop and a hosted model in the cloud:

    judge: {base_url: https://api.openai.com/v1, model: gpt-4.1-mini, api_key_env: OPENAI_API_KEY}
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kit.config.sections import Section

JUDGE_PORT = 8765  # `make judge-server` listens here; the default base_url points at it


class JudgeConfig(Section):
    """Where an LLM judge reward asks, and when its failures stop a run (read by kit.rewards.judge and
    kit.monitor.judge_health)."""

    base_url: str = Field(f"http://127.0.0.1:{JUDGE_PORT}/v1",
                          description="the OpenAI-compatible endpoint (vLLM's server, Ollama's /v1, llama.cpp's "
                          "server, a hosted API); the default is `make judge-server`'s")
    model: str = Field("judge", description="the model name the endpoint serves (`make judge-server` serves "
                       "`judge`)")
    api_key_env: str | None = Field(None, description="the NAME of the environment variable that holds the API key "
                                    "(never the key itself: that is not written anywhere); null: no key")
    response_format: Literal["text", "json_object", "json_schema"] = Field(
        "text", description="how the reply is held to a score, for a judge with json_field: json_object sends "
        "llama.cpp's server form ({type: json_object, schema}), json_schema OpenAI's (also vLLM's and Ollama's); "
        "text asks in words")
    timeout_s: float = Field(30.0, gt=0, description="seconds one judgement may take before it is tried again")
    retries: int = Field(2, ge=0, description="tries after the first, with backoff (0.5 s, 1 s, ...)")
    concurrency: int = Field(4, gt=0, description="judgements asked at once")
    max_failed: float = Field(0.5, gt=0, le=1, description="the run stops (after a checkpoint) when more than this "
                              "share of judgements failed in each of the last `failing_steps` logged steps")
    failing_steps: int = Field(5, gt=0, description="logged steps in a row over max_failed before the run stops")
    calibration: Literal["stop", "warn", "off"] = Field(
        "stop", description="what a judge that fails its calibration does before training (the recipe's "
        "JUDGE_CALIBRATION: good above wrong, no self-praising wrong reply paid): stop refuses to train, warn says "
        "it and goes on, off skips it")
