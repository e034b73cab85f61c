"""Loading a GGUF for verification on a CPU with AMX, whose llama.cpp kernels can crash the process."""

import llama_cpp.llama_cpp as low_level

from kit.export.gguf.load import plain_cpu_weights


def test_inside_the_wrapper_a_model_loads_without_extra_buffers_and_after_it_the_default_is_back():
    default = low_level.llama_model_default_params
    assert default().use_extra_bufts  # llama.cpp's own default: repack weights (AMX where the CPU has it)
    with plain_cpu_weights():
        assert low_level.llama_model_default_params().use_extra_bufts is False
    assert low_level.llama_model_default_params is default and default().use_extra_bufts


def test_the_default_is_back_after_a_load_that_fails():
    default = low_level.llama_model_default_params
    try:
        with plain_cpu_weights():
            raise ValueError("the file would not load")
    except ValueError:
        pass
    assert low_level.llama_model_default_params is default
