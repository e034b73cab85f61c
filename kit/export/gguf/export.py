"""Export a merged model folder to verified GGUF files (+ an Ollama Modelfile).

    python -m kit export outputs/gsm8k-run/merged --quant q8_0 q4_k_m

Writes OUT/gguf/<name>.<QUANT>.gguf, OUT/gguf/Modelfile and OUT/gguf/verification.json, where OUT is
the run folder holding `merged/`. Files are made in a hidden staging folder and moved in only when
all of them were written; a failed conversion leaves nothing behind. A GGUF already there is kept
(the export stops before any work) unless `--overwrite` is given.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kit.atomic import PARTIAL
from kit.errors import KitError
from kit.export.gguf import convert, quants, spm
from kit.export.gguf.load import has_amx_kernels
from kit.export.gguf.reference import Reference
from kit.export.gguf.verify import Verification, print_table, verify, write_report
from kit.outputs import VERIFICATION, RunDir, run_of


@dataclass
class ExportResult:
    files: list[Path]
    modelfile: Path | None
    verifications: list[Verification]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verifications)


def default_out_dir(model_dir: Path) -> Path:
    """OUT/gguf for a run's OUT/merged; a gguf folder inside any other model folder."""
    run = run_of(model_dir)
    return run.gguf if run and model_dir == run.merged else RunDir(model_dir).gguf


def default_name(model_dir: Path) -> str:
    run = run_of(model_dir)
    return run.root.name if run and model_dir == run.merged else model_dir.name


def export_gguf(model_dir: Path, quant_names: list[str], out_dir: Path | None = None, name: str | None = None,
                check: bool = True, overwrite: bool = False) -> ExportResult:
    model_dir = Path(model_dir)
    wanted = list(dict.fromkeys(quants.normalize(q) for q in quant_names))  # validated before any work
    if not (model_dir / "config.json").is_file():
        raise KitError(f"{model_dir} is not a model folder (no config.json); pass OUT/merged from a training run")
    refuse_vision_model(model_dir)
    out_dir = Path(out_dir) if out_dir else default_out_dir(model_dir)
    name = name or default_name(model_dir)
    if not overwrite:
        refuse_existing([out_dir / quants.file_name(name, q) for q in wanted])
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".export{PARTIAL}", dir=out_dir))  # a run's next start sweeps it
    try:
        staged = make_files(model_dir, wanted, staging, name)
        files = [publish(path, out_dir) for path in staged]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    modelfile = write_modelfile(model_dir, files[0], out_dir)
    verifications = verify_files(model_dir, files, wanted, out_dir) if check else []
    return ExportResult(files, modelfile, verifications)


def refuse_vision_model(model_dir: Path) -> None:
    """llama.cpp's converter writes a vision-language model's language half unless asked for its projector too (a
    second file, mmproj, which the kit does not write or verify yet): such a GGUF would answer without the picture."""
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("vision_config"):
        raise KitError(f"{model_dir} is a vision-language model ({', '.join(config.get('architectures') or ['?'])}); "
                       "the kit's GGUF export would keep its language model alone (the vision projector, mmproj, "
                       "is not exported yet), and the file would answer without seeing the picture. Use the "
                       "merged 16-bit folder itself: transformers' AutoModelForImageTextToText or vLLM load it")


def refuse_existing(paths: list[Path]) -> None:
    """A GGUF someone may already have loaded into Ollama is replaced only when asked, before any work."""
    existing = [p for p in paths if p.exists()]
    if existing:
        raise KitError(f"{existing[0]} already exists; pass --overwrite to replace it, or choose another "
                       "--out or --name")


def make_files(model_dir: Path, wanted: list[str], staging: Path, name: str) -> list[Path]:
    """Convert what the converter writes directly; k-quants start from a 16-bit file made once."""
    made = {}
    source_dir = spm.converter_input(model_dir, staging)
    for quant in [q for q in wanted if q in quants.CONVERTER_TYPES]:
        print(f"export: converting {model_dir} to {quant}")
        made[quant] = staging / quants.file_name(name, quant)
        convert.convert(source_dir, quant, made[quant], shown_as=model_dir)
    k_quants = [q for q in wanted if q in quants.QUANTIZER_TYPES]
    if k_quants:
        source_type = convert.source_type(model_dir)
        source = made.get(source_type) or staging / f".source.{source_type}.gguf"
        if not source.exists():
            print(f"export: converting {model_dir} to {source_type} (source for {', '.join(k_quants)})")
            convert.convert(source_dir, source_type, source, shown_as=model_dir)
        for quant in k_quants:
            print(f"export: quantizing to {quant} with llama.cpp")
            made[quant] = staging / quants.file_name(name, quant)
            convert.quantize(source, quant, made[quant])
    return [made[q] for q in wanted]


def publish(path: Path, out_dir: Path) -> Path:
    final = out_dir / path.name
    os.replace(path, final)
    return final


def write_modelfile(model_dir: Path, gguf: Path, out_dir: Path) -> Path:
    from transformers import AutoTokenizer, GenerationConfig

    from kit.export.gguf.modelfile import modelfile_text
    from kit.export.gguf.reference import eos_ids

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    try:
        generation = GenerationConfig.from_pretrained(model_dir)
    except OSError:  # no generation_config.json: the tokenizer's EOS alone
        generation = None
    path = out_dir / "Modelfile"
    chosen = earlier_choice(path) or gguf.name  # a later export adds files; it does not move FROM off the first
    others = sorted(p.name for p in out_dir.glob("*.gguf") if p.name != chosen)
    note = f"# Also in this folder: {', '.join(others)}. Point FROM at the one to use.\n" if others else ""
    path.write_text(note + modelfile_text(chosen, tokenizer, eos_ids(generation, tokenizer)))
    return path


def earlier_choice(modelfile: Path) -> str | None:
    """The GGUF file an existing Modelfile runs, when that file is still beside it."""
    if not modelfile.is_file():
        return None
    for line in modelfile.read_text().splitlines():
        if line.startswith("FROM ./") and (modelfile.parent / line[len("FROM ./"):].strip()).is_file():
            return line[len("FROM ./"):].strip()
    return None


def verify_files(model_dir: Path, files: list[Path], wanted: list[str], out_dir: Path) -> list[Verification]:
    print(f"verify: loading {model_dir} as the reference and each GGUF in llama.cpp")
    if has_amx_kernels():
        print("verify: this CPU has AMX, and llama.cpp's AMX matrix kernels can crash (llama.cpp issue 20824): "
              "the check runs its ordinary CPU kernels. A crash of llama.cpp or Ollama on this machine may be that "
              "bug, not the file")
    reference = Reference(model_dir)
    results = [verify(path, quant, reference) for path, quant in zip(files, wanted)]
    print_table(results)
    write_report(results, out_dir / VERIFICATION)
    return results


def write_gguf(job) -> Path | None:
    """The `gguf` save format (kit.config.formats): from OUT/merged; a failed check is recorded, not raised."""
    merged = job.written.get("merged_16bit")
    if merged is None:
        return None
    if not export_gguf(merged, job.settings.quant).ok:
        job.failed.append("gguf")
    return job.out.gguf
