"""verification.json across exports: a later export adds its verdicts beside the earlier ones."""

import json

from kit.export.gguf.verify import Check, Verification, write_report


def verdict(folder, name, ok=True):
    (folder / name).write_bytes(b"GGUF")
    return Verification(file=str(folder / name), quant=name.split(".")[1].lower(),
                        checks=[Check("tokenizer", ok, True, "9/9 strings identical")])


def test_a_second_export_keeps_the_first_exports_verdicts(tmp_path):
    report = tmp_path / "verification.json"
    write_report([verdict(tmp_path, "run.Q8_0.gguf")], report)
    write_report([verdict(tmp_path, "run.Q4_K_M.gguf")], report)
    assert [r["quant"] for r in json.loads(report.read_text())] == ["q8_0", "q4_k_m"]


def test_a_file_exported_again_replaces_its_verdict_and_a_deleted_file_leaves(tmp_path):
    report = tmp_path / "verification.json"
    write_report([verdict(tmp_path, "run.Q8_0.gguf", ok=False), verdict(tmp_path, "run.F16.gguf")], report)
    (tmp_path / "run.F16.gguf").unlink()
    write_report([verdict(tmp_path, "run.Q8_0.gguf", ok=True)], report)
    records = json.loads(report.read_text())
    assert [(r["quant"], r["ok"]) for r in records] == [("q8_0", True)]


def test_the_quantizers_c_output_is_caught_not_printed(capfd):
    import os

    from kit.export.gguf.convert import c_output_captured

    with c_output_captured() as log:
        os.write(1, b"llama_model_quantize_impl: tensor 1 of 272\n")
        os.write(2, b"a warning\n")
    assert capfd.readouterr() == ("", "")
    assert log.read() == "llama_model_quantize_impl: tensor 1 of 272\na warning\n"


def test_a_later_export_leaves_the_modelfile_on_the_file_it_ran(tmp_path):
    from kit.export.gguf.export import earlier_choice

    modelfile = tmp_path / "Modelfile"
    assert earlier_choice(modelfile) is None
    modelfile.write_text("# Also in this folder: x\nFROM ./run.Q8_0.gguf\nTEMPLATE \"\"\"{{ .Prompt }}\"\"\"\n")
    assert earlier_choice(modelfile) is None  # the file it names is gone: the new export's first file instead
    (tmp_path / "run.Q8_0.gguf").write_bytes(b"GGUF")
    assert earlier_choice(modelfile) == "run.Q8_0.gguf"
