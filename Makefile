# Every target installs what it needs first (scripts/install.sh makes .venv on first use).
#   make train RECIPE=gsm8k [MODEL=… STEPS=… CONFIG=file.yaml OUT=dir PROFILE=smoke|full DATA=file
#                            SAVE=merged_16bit,gguf QUANT=q4_k_m,q8_0 ARGS='grpo.beta=0.04']
#   make export MERGED=outputs/<run>/merged [QUANT=q8_0,q4_k_m]
#   make test

RECIPE ?= gsm8k
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: install train export test clean

comma := ,

$(STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh

install: $(STAMP)

train: $(STAMP)
	$(PY) -m kit train $(RECIPE) \
		$(if $(MODEL),--model $(MODEL)) $(if $(STEPS),--steps $(STEPS)) $(if $(CONFIG),--config $(CONFIG)) \
		$(if $(OUT),--out $(OUT)) $(if $(PROFILE),--profile $(PROFILE)) $(if $(DATA),--data $(DATA)) \
		$(if $(SAVE),save.formats=[lora$(comma)$(SAVE)]) $(if $(QUANT),save.quant=[$(QUANT)]) $(ARGS)

export: $(STAMP)
	$(PY) -m kit export $(MERGED) --quant $(subst $(comma), ,$(or $(QUANT),q4_k_m))

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf .venv .pytest_cache outputs
