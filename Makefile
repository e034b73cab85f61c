# Every target installs what it needs first (scripts/install.sh makes .venv on first use).
#   make train RECIPE=gsm8k [MODEL=… STEPS=… CONFIG=file.yaml OUT=dir PROFILE=smoke|full DATA=file
#                            SAVE=merged_16bit,gguf,hub HUB_REPO=me/model QUANT=q4_k_m,q8_0 RESUME=1 GPU=T4 FORCE=1
#                            ARGS='grpo.beta=0.04'
#                            NPROC=4 LAUNCHER=ddp|zero2|zero3|fsdp V=1     # NPROC: one process per GPU;
#                            NNODES=2 NODE_RANK=0|1 MASTER_ADDR=host MASTER_PORT=29500]   # several machines
#                                                                    # V=1: every metric and warning
#   make plan RECIPE=gsm8k [MODEL=… GPU=T4 CONFIG=file.yaml ARGS='grpo.num_generations=16']   # fits the GPU?
#   make demo                 # CPU: a tiny model learns digit sums (SFT then GRPO), in a couple of minutes
#   make demo-tools [ARGS='seed=2']  # CPU: SmolLM2-135M-Instruct learns to use a sandboxed Python tool, SFT then GRPO
#   make demo-vision [ARGS='seed=2'] # CPU: a tiny vision-language model learns to count shapes, SFT then GRPO
#   make demo-real [ARGS='seed=2']   # CPU: the real SmolLM2-135M-Instruct, SFT then GRPO with LoRA, ~13 minutes
#   make judge-server [JUDGE=file.gguf PORT=8765]   # llama.cpp's OpenAI-compatible server for LLM judge rewards
#   make export MERGED=outputs/<run>/merged [QUANT=q8_0,q4_k_m]
#   make doctor [OUT=file.json]   # can this GPU run the default route? minutes; a JSON for bug reports
#   make gpu-check [SHAPE=tiny|qwen2.5-1.5b|smollm2 STEPS=4 OUT=file.json]   # the GPU route end to end, offline, one line a check
#   make test [TEST_WORKERS=2]  # ruff, then every test (pytest --all: the slow end-to-end runs too; CI runs this)
#   make test-quick          # ruff, then the developer's loop (pytest: the slow tests left out, about 1.5 minutes)
#   make docs                # the documentation site from docs/ into site/ (--strict: a broken link fails)
#   make docs-serve          # the same, served at http://127.0.0.1:8000 while you edit

RECIPE ?= gsm8k
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: install train plan demo demo-real demo-tools demo-vision judge-server export doctor gpu-check test test-quick docs docs-serve clean

comma := ,

$(STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh

install: $(STAMP)

# Only the options that are set, so make echoes one clean command line.
TRAIN_OPTIONS = $(strip $(if $(MODEL),--model $(MODEL)) $(if $(STEPS),--steps $(STEPS)) \
	$(if $(CONFIG),--config $(CONFIG)) $(if $(OUT),--out $(OUT)) $(if $(PROFILE),--profile $(PROFILE)) \
	$(if $(DATA),--data $(DATA)) $(if $(SAVE),save.formats=[lora$(comma)$(SAVE)]) $(if $(QUANT),save.quant=[$(QUANT)]) \
	$(if $(RESUME),--resume) $(if $(GPU),--gpu $(GPU)) $(if $(FORCE),--skip-plan) \
	$(if $(NPROC),--num-processes $(NPROC)) $(if $(LAUNCHER),--launcher $(LAUNCHER)) $(if $(V),--verbose) \
	$(if $(HUB_REPO),save.hub_repo=$(HUB_REPO)) $(MACHINE_OPTIONS) $(ARGS))
# several machines (each runs the same make train; under SLURM these come from SLURM's variables)
MACHINE_OPTIONS = $(if $(NNODES),launch.num_machines=$(NNODES)) $(if $(NODE_RANK),launch.machine_rank=$(NODE_RANK)) \
	$(if $(MASTER_ADDR),launch.main_address=$(MASTER_ADDR)) $(if $(MASTER_PORT),launch.main_port=$(MASTER_PORT))
PLAN_OPTIONS = $(strip $(if $(MODEL),--model $(MODEL)) $(if $(GPU),--gpu $(GPU)) $(if $(CONFIG),--config $(CONFIG)) $(ARGS))

train: $(STAMP)
	$(PY) -m kit train $(RECIPE) $(TRAIN_OPTIONS)

plan: $(STAMP)
	$(PY) -m kit plan $(RECIPE) $(PLAN_OPTIONS)

demo: $(STAMP)
	$(PY) -m kit train digit_sum --config configs/demo_cpu.yaml --out $(or $(OUT),outputs/demo-$(shell date +%Y%m%d-%H%M%S)) $(ARGS)

demo-real: $(STAMP)
	$(PY) -m kit train addition --config configs/demo_smollm2.yaml --out $(or $(OUT),outputs/demo-real-$(shell date +%Y%m%d-%H%M%S)) $(ARGS)

demo-tools: $(STAMP)
	$(PY) -m kit train python_tool --config configs/demo_tools.yaml --out $(or $(OUT),outputs/demo-tools-$(shell date +%Y%m%d-%H%M%S)) $(ARGS)

demo-vision: $(STAMP)
	$(PY) -m kit train count_shapes --config configs/demo_vision.yaml --out $(or $(OUT),outputs/demo-vision-$(shell date +%Y%m%d-%H%M%S)) $(ARGS)

judge-server: $(STAMP)
	$(PY) -m kit.cli.judge_server $(if $(JUDGE),--model $(JUDGE)) $(if $(PORT),--port $(PORT))

export: $(STAMP)
	$(PY) -m kit export $(MERGED) --quant $(subst $(comma), ,$(or $(QUANT),q4_k_m))

doctor: $(STAMP)
	$(PY) -m kit doctor $(if $(OUT),--out $(OUT))

gpu-check: $(STAMP)
	$(PY) -m bench.gpu_check $(if $(SHAPE),--shape $(SHAPE)) $(if $(STEPS),--steps $(STEPS)) $(if $(OUT),--out $(OUT))

# Two pytest processes share the cores (pytest-xdist, a file each at a time): most of a test's time is one
# thread (imports, a subprocess starting), so two finish in little more than half the time. The tests marked
# serial run after, alone.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q --all -m "not serial" -n $(TEST_WORKERS) --dist loadfile --durations=15
	$(PY) -m pytest -q --all -m serial --durations=5

test-quick: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q

docs: $(STAMP)
	$(PY) -m mkdocs build --strict

docs-serve: $(STAMP)
	$(PY) -m mkdocs serve

clean:
	rm -rf .venv .pytest_cache outputs
