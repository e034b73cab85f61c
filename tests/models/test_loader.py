import pytest

from kit import env
from kit.config import TINY_MODEL, ModelConfig
from kit.errors import KitError
from kit.models import loader


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


def pretend_gpu(monkeypatch, capability: tuple[int, int]):
    """torch as it answers on a GPU of this compute capability; torch 2.13's is_bf16_supported() counts
    emulation by default, so it says True on a T4 too."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)


@pytest.mark.parametrize("capability, expected", [((7, 5), "float16"), ((8, 0), "bfloat16"), ((9, 0), "bfloat16")])
def test_weights_are_bf16_only_where_the_gpu_computes_in_it(monkeypatch, capability, expected):
    import torch

    pretend_gpu(monkeypatch, capability)
    assert env.bf16_supported() == (expected == "bfloat16")
    assert loader.weights_dtype(ModelConfig(), cuda=True) is getattr(torch, expected)
    assert loader.weights_dtype(ModelConfig(dtype="bfloat16"), cuda=True) is torch.bfloat16  # asked for by name


class EngineThatCannotGenerate:
    def fast_generate(self, prompts, sampling_params=None, lora_request=None):
        raise RuntimeError("triton.runtime.errors.OutOfResources: out of resource: shared memory")


def test_a_vllm_engine_that_fails_to_start_stops_the_run_with_the_way_out(monkeypatch):
    def engine_fails(**kwargs):
        assert kwargs["fast_inference"] is True
        raise ValueError("No available attention backend for compute capability 7.5\nmore detail")

    monkeypatch.setattr(env, "vllm_usable", lambda: True)
    monkeypatch.setattr(env, "gpu_name", lambda: "Tesla T4")
    monkeypatch.setattr(loader.FastLanguageModel, "from_pretrained", engine_fails)
    with pytest.raises(KitError) as caught:
        loader.load_model(ModelConfig(name="org/model", fast_inference=True))
    message = str(caught.value)
    assert message.startswith("vLLM's engine failed to start on this GPU (Tesla T4): ValueError: No available "
                              "attention backend for compute capability 7.5. Nothing was trained."), message
    assert "model.fast_inference=false" in message and "more detail" not in message


def test_a_vllm_engine_that_cannot_generate_is_found_before_training(monkeypatch):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=lambda **kwargs: kwargs))
    monkeypatch.setattr(env, "vllm_usable", lambda: True)
    monkeypatch.setattr(loader.FastLanguageModel, "from_pretrained",
                        lambda **kwargs: (EngineThatCannotGenerate(), object()))
    with pytest.raises(KitError, match=r"failed to generate .*OutOfResources.*model.fast_inference=false"):
        loader.load_model(ModelConfig(name="org/model", fast_inference=True))


def test_without_vllm_a_load_error_is_not_blamed_on_vllm(monkeypatch):
    def broken(**kwargs):
        raise ValueError("a bug in the loader")

    monkeypatch.setattr(loader.FastLanguageModel, "from_pretrained", broken)
    with pytest.raises(ValueError, match="a bug in the loader"):
        loader.load_model(ModelConfig(name="org/model", fast_inference=False))
