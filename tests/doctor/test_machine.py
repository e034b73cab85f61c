"""kit.doctor.machine: what a check needs and this machine lacks, and the versions against the kit's pins."""

from kit.doctor.machine import Machine


def test_missing_pieces_are_named():
    versions = {name: "1.0" for name in ("unsloth", "trl", "peft", "bitsandbytes")} | {"vllm": None}
    machine = Machine(cuda=False, gpu=None, gpu_memory_gib=None, bf16=False, versions=versions)
    assert machine.gaps(("unsloth", "vllm", "cuda")) == ["vLLM not installed", "no CUDA device"]
    assert machine.gaps(("trl", "peft")) == []


def test_the_kits_pins_are_read_from_its_installed_metadata():
    from kit.doctor.machine import pins

    wanted = pins()
    assert wanted["trl"].contains("1.15.0") and not wanted["trl"].contains("1.14.0")
    assert wanted["vllm"].contains("0.31.0") and not wanted["vllm"].contains("0.33.0")  # the gpu extra counts
    assert wanted["torch"].contains("2.13.0+cu130")  # a local build label is the same release


def test_versions_outside_the_pins_are_named_and_missing_ones_are_not():
    from kit.doctor.machine import outside_pins, pins

    found = {"trl": "1.14.0", "torch": "2.13.0+cpu", "vllm": None, "transformers": "5.17.0"}
    assert outside_pins(found, pins()) == ["trl 1.14.0 (kit: ==1.15.0)"]
