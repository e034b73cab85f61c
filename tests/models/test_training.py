import pytest

from kit import env
from kit.config import TINY_MODEL, ModelConfig
from kit.errors import KitError
from kit.models import training as loader


def test_fast_inference_without_gpu_says_so_once_and_continues(monkeypatch, capsys):
    monkeypatch.setattr(env, "has_gpu", lambda: False)
    assert loader.fast_inference_available(ModelConfig(fast_inference=True)) is False
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "needs a GPU (vLLM)" in lines[0] and "model.fast_inference=false" in lines[0]
    assert loader.fast_inference_available(ModelConfig(fast_inference=False)) is False
    assert capsys.readouterr().out == ""


def test_fast_inference_without_vllm_says_so(monkeypatch, capsys):
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    monkeypatch.setattr(env, "has_vllm", lambda: False)
    assert loader.fast_inference_available(ModelConfig(fast_inference=True)) is False
    assert "vLLM, which is not installed" in capsys.readouterr().out


def test_model_names_resolve(tiny_model, tmp_path):
    assert loader.resolve_model_name(TINY_MODEL) == str(tiny_model)
    assert loader.resolve_model_name("unsloth/Qwen2.5-1.5B-Instruct") == "unsloth/Qwen2.5-1.5B-Instruct"
    with pytest.raises(KitError, match=f"model folder {tmp_path} is empty, no config.json"):
        loader.resolve_model_name(str(tmp_path))  # transformers would blame a missing `model_type` key
    (tmp_path / "config.json").write_text("{}")
    assert loader.resolve_model_name(str(tmp_path)) == str(tmp_path)
    with pytest.raises(KitError, match="model path ./no/such/model does not exist"):
        loader.resolve_model_name("./no/such/model")


@pytest.mark.parametrize("four_bit", [False, True])
def test_load_model_applies_lora_and_quantization(tiny_model, four_bit, capsys):
    cfg = ModelConfig(name=TINY_MODEL, max_seq_length=256, load_in_4bit=four_bit, fast_inference=True,
                      lora_rank=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    model, tokenizer = loader.load_model(cfg, seed=0)
    names = [name for name, _ in model.named_modules()]
    assert any(name.endswith("q_proj.lora_A.default") for name in names)
    assert not any("k_proj.lora_A" in name for name in names)  # only the modules asked for
    kinds = {type(m).__name__ for m in model.modules()}
    assert ("Linear4bit" in kinds) == four_bit
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    # per layer, rank 4: q_proj A 4x256 + B 256x4; v_proj (2 kv heads x 64 = 128 out) A 4x256 + B 128x4
    assert trainable == 2 * (4 * 256 + 256 * 4 + 4 * 256 + 128 * 4)
    assert tokenizer.pad_token is not None
    assert "needs a GPU (vLLM)" in capsys.readouterr().out


def test_unreachable_model_says_what_to_do(monkeypatch):
    def offline(**kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files.\nCheck your connection.")

    monkeypatch.setattr(loader.FastLanguageModel, "from_pretrained", offline)
    with pytest.raises(KitError,
                       match=r"cannot load model org/model \(We couldn't connect.*\); .*MODEL=path.*PROFILE=smoke"):
        loader.load_model(ModelConfig(name="org/model", fast_inference=False))


@pytest.mark.parametrize("reported, problem", [("575.57.08", True), ("580.95.05", False), ("", False)])
def test_an_old_nvidia_driver_is_named(monkeypatch, reported, problem):
    from types import SimpleNamespace

    from kit import env

    monkeypatch.setattr(env.subprocess, "run", lambda *a, **k: SimpleNamespace(
        returncode=0 if reported else 9, stdout=reported + "\n"))
    message = env.driver_problem()
    assert (message is not None) == problem
    if problem:
        assert reported in message and "580 or newer" in message


def test_no_nvidia_smi_is_no_driver_problem(monkeypatch):
    from kit import env

    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(env.subprocess, "run", missing)
    assert env.nvidia_driver_version() is None and env.driver_problem() is None
