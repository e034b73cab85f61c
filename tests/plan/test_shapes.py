import json
import socket
import threading
import time

import pytest

from kit.errors import KitError
from kit.plan.shapes import read_shape, shape_from_config
from tests.plan.conftest import MODEL_CONFIGS


@pytest.mark.parametrize("model, billions", [
    ("Qwen2.5-1.5B-Instruct", 1.54), ("Qwen2.5-3B-Instruct", 3.09), ("Llama-3.1-8B-Instruct", 8.03), ("phi-4", 14.66),
    ("Qwen3-4B", 4.02), ("Phi-4-mini-instruct", 3.84),
    ("gemma-3-4b-it", 3.88),  # the text model: 4.30B published, less the vision tower (0.42B)
])
def test_parameter_counts_match_the_published_sizes(model, billions):
    assert read_shape(str(MODEL_CONFIGS / model)).total_params / 1e9 == pytest.approx(billions, abs=0.01)


def test_parameter_count_matches_the_real_tiny_model(tiny_model):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert read_shape(str(tiny_model)).total_params == model.num_parameters()


def test_config_is_read_from_the_hugging_face_cache_without_the_hub(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--someone--Some-Model" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((MODEL_CONFIGS / "Qwen2.5-1.5B-Instruct" / "config.json").read_text())
    (tmp_path / "hub" / "models--someone--Some-Model" / "refs").mkdir()
    (tmp_path / "hub" / "models--someone--Some-Model" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert read_shape("someone/Some-Model").hidden == 1536


def test_a_model_that_cannot_be_found_gets_one_clear_message(monkeypatch, tmp_path):
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(KitError, match="cannot read config.json for 'nobody/nothing'"):
        read_shape("nobody/nothing")


@pytest.fixture(params=["refuses", "hangs up"])
def unreachable_hub(request, tmp_path, monkeypatch):
    """A hub endpoint on this machine that refuses connections (as a hub out of reach: huggingface_hub retries), or
    accepts them and hangs up (the first line of each request is kept); an empty cache; online mode. The waits
    between huggingface_hub's retries are recorded instead of slept."""
    import huggingface_hub.constants as constants
    import huggingface_hub.utils._http as http

    server = socket.create_server(("127.0.0.1", 0))
    endpoint, requests, waits = f"http://127.0.0.1:{server.getsockname()[1]}", [], []
    if request.param == "refuses":
        server.close()
    else:
        threading.Thread(target=hang_up, args=(server, requests), daemon=True).start()
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(http.time, "sleep", waits.append)
    yield request.param, requests, waits
    server.close()


def hang_up(server: socket.socket, requests: list[bytes]) -> None:
    while True:
        try:
            connection, _ = server.accept()
        except OSError:  # closed: the test is over
            return
        requests.append(connection.recv(1024).split(b"\r\n")[0])
        connection.close()


def test_a_hub_out_of_reach_is_asked_once_then_said_in_one_message(unreachable_hub):
    """With nothing cached, huggingface_hub asks six times more, over 24 s (`kit plan` printed five Retry lines
    before its message), and lets a hub that hangs up raise httpx's error; the plan asks once, and says why."""
    hub, requests, waits = unreachable_hub
    started = time.monotonic()
    with pytest.raises(KitError, match="^cannot read config.json for 'Qwen/Qwen2.5-1.5B-Instruct': .*the hub did not "
                                       "answer"):
        read_shape("Qwen/Qwen2.5-1.5B-Instruct")
    assert waits == []  # no retry
    assert len([r for r in requests if r.startswith(b"HEAD ")]) == (hub == "hangs up")  # asked once, when it can be
    assert time.monotonic() - started < 5


def test_a_folder_without_config_and_a_config_without_keys_are_refused(tmp_path):
    with pytest.raises(KitError, match="no config.json"):
        read_shape(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "custom_thing", "hidden_size": 64}))
    with pytest.raises(KitError, match="no 'num_attention_heads' key"):
        read_shape(str(tmp_path))


def test_a_sparse_config_gets_the_defaults_transformers_gives_it():
    gemma = read_shape(str(MODEL_CONFIGS / "gemma-3-4b-it"))
    assert (gemma.heads, gemma.kv_heads, gemma.head_dim, gemma.vocab) == (8, 4, 256, 262208)
    assert gemma.tied_embeddings  # Gemma ties its head to its embedding; the file does not say so
    assert gemma.left_out == () and round(gemma.vision.params / 1e9, 2) == 0.42  # SigLIP and its projector
    assert read_shape(str(MODEL_CONFIGS / "Qwen3-4B")).left_out == ()


def test_a_model_type_transformers_does_not_know_is_read_as_written_and_said():
    text = json.loads((MODEL_CONFIGS / "Llama-3.1-8B-Instruct" / "config.json").read_text())
    shape = shape_from_config({**text, "model_type": "someones_llama"})
    assert shape.hidden == 4096 and "unknown to transformers" in shape.left_out[0]


def test_multimodal_configs_contribute_their_text_model():
    text = json.loads((MODEL_CONFIGS / "Llama-3.1-8B-Instruct" / "config.json").read_text())
    shape = shape_from_config({"model_type": "some_vlm", "text_config": text})
    assert shape.hidden == 4096 and shape.layers == 32
