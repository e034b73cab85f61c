"""A SentencePiece model whose ChatML tokens are user-defined pieces (the Llama-2 / Mistral family's layout)
exports with those tokens whole and the same spaces as transformers."""

import io
import json

import pytest

from kit.export.gguf import spm
from kit.export.gguf.export import export_gguf
from kit.models.tiny import _CORPUS, CHATML_TEMPLATE

pytestmark = pytest.mark.slow
CHATML = ["<|im_start|>", "<|im_end|>"]


def user_defined_chatml_model(folder):
    """A 1-layer Llama whose tokenizer.model carries <|im_start|> and <|im_end|> as user-defined pieces,
    saved by transformers 5 (which writes no added_tokens_decoder and a Metaspace "first" tokenizer)."""
    import sentencepiece
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True)
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([line.replace("\n", " ") for line in _CORPUS * 20]), model_writer=model,
        vocab_size=400, model_type="bpe", byte_fallback=True, user_defined_symbols=CHATML,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, hard_vocab_limit=False, minloglevel=2)
    (folder / "tokenizer.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "<|im_end|>"}))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, bos_token_id=1,
                         eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    return tokenizer


def test_transformers_5_saves_the_layout_that_broke_exports(tmp_path):
    tokenizer = user_defined_chatml_model(tmp_path / "m")
    assert "added_tokens_decoder" not in json.loads((tmp_path / "m" / "tokenizer_config.json").read_text())
    assert spm.space_rules(tokenizer) == (True, False)  # a space at the input's start only


def test_chatml_pieces_export_whole_and_chat_prompts_tokenize_identically(tmp_path):
    import llama_cpp

    merged = tmp_path / "run" / "merged"
    tokenizer = user_defined_chatml_model(merged)
    result = export_gguf(merged, ["f16"])
    checks = {c.name: c for c in result.verifications[0].checks}
    assert checks["tokenizer"].passed, checks["tokenizer"].detail
    assert checks["eos"].passed and checks["template"].passed

    llm = llama_cpp.Llama(str(result.files[0]), vocab_only=True, verbose=False)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is 7 plus 5?"}], tokenize=False,
                                           add_generation_prompt=True)
    assert (llm.tokenize(prompt.encode(), add_bos=False, special=True)
            == tokenizer(prompt, add_special_tokens=False).input_ids)
    assert llm.metadata["tokenizer.ggml.add_space_prefix"] == "false"
    assert json.loads((merged / "tokenizer_config.json").read_text()).get("added_tokens_decoder") is None  # untouched
    assert (sorted(p.name for p in (merged.parent / "gguf").iterdir())
            == ["Modelfile", "run.F16.gguf", "verification.json"])


def test_other_folders_go_to_the_converter_as_they_are(tmp_path):
    from kit.models.tiny import tiny_model_path

    bpe = tmp_path / "bpe"
    bpe.mkdir()
    (bpe / "tokenizer.json").write_text("{}")
    assert spm.converter_input(bpe, tmp_path) == bpe
    tiny = tiny_model_path("llama")  # SentencePiece with control pieces: the staged copy agrees with it
    staged = spm.converter_input(tiny, tmp_path)
    config = json.loads((staged / "tokenizer_config.json").read_text())
    assert {v["content"] for v in config["added_tokens_decoder"].values()} >= set(CHATML)
    assert (staged / "model.safetensors").resolve() == (tiny / "model.safetensors").resolve()
