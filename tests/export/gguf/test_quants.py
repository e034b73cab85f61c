import pytest

from kit.errors import KitError
from kit.export.gguf.quants import file_name, llama_ftype, normalize


@pytest.mark.parametrize(
    "name, expected",
    [("Q4_K_M", "q4_k_m"), ("q8_0", "q8_0"), ("quantized", "q4_k_m"), ("fast_quantized", "q8_0"),
     ("not_quantized", "f16"), ("q5_k", "q5_k_m"), ("BF16", "bf16"), ("q6_k", "q6_k")],
)
def test_normalize_accepts_llama_cpp_and_unsloth_names(name, expected):
    assert normalize(name) == expected


def test_unknown_quant_lists_valid_ones():
    with pytest.raises(KitError) as err:
        normalize("q4_k_x")
    assert "unknown quantization 'q4_k_x'; choose from: f32, f16, bf16, q8_0, q2_k" in str(err.value)


def test_importance_matrix_quants_are_refused_with_reason():
    with pytest.raises(KitError, match="importance matrix"):
        normalize("iq2_xxs")


def test_file_names_follow_unsloth():
    assert file_name("gsm8k-run", "q4_k_m") == "gsm8k-run.Q4_K_M.gguf"


@pytest.mark.parametrize("quant", ["q4_k_m", "q5_k_m", "q6_k", "q2_k", "q4_0"])
def test_every_quantizer_type_maps_to_a_llama_cpp_ftype(quant):
    assert isinstance(llama_ftype(quant), int)
