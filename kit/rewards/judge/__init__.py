"""An LLM judge as a reward (kit.rewards.llm_judge), by concern: reward.py (the reward TRL calls, its metrics and
its outage lines), prompt.py (what the judge is asked and how its reply becomes a score: the fence, the screen,
the parse) and client.py (the OpenAI-compatible endpoint asked many questions at once: concurrency, retries,
cache). An endpoint the kit starts offline: `make judge-server` (kit/cli/judge_server.py)."""
