"""One small file of a Hugging Face model (its config.json): from the cache, else the hub, asked once.

    path = hub_config_file("Qwen/Qwen2.5-1.5B-Instruct")   # raises HubUnreachable(reason) when neither has it

The planner (kit.plan.shapes) and the reward-model check (kit.rewards.reward_models.load) both read a model's
config.json without its weights; each words the failure for what it was reading.
"""

from __future__ import annotations

from pathlib import Path


class HubUnreachable(Exception):
    """Not in the Hugging Face cache, and the hub did not answer; the argument names the error."""


def hub_config_file(repo_id: str) -> Path:
    import httpx
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url, try_to_load_from_cache
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:  # falls back to the local cache when the hub cannot be reached
        if not isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
            # Ask once first: with nothing cached, hf_hub_download asks a hub it cannot reach six times more, over
            # 24 s of "Retrying in 8s" lines, and no argument or setting of its own turns that off.
            get_hf_file_metadata(hf_hub_url(repo_id, "config.json"))
        return Path(hf_hub_download(repo_id, "config.json"))
    except (LocalEntryNotFoundError, HfHubHTTPError, httpx.HTTPError, OSError, ValueError) as err:
        raise HubUnreachable(type(err).__name__) from None
