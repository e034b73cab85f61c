# Every target installs what it needs first (scripts/install.sh makes .venv on first use).
#   make train RECIPE=gsm8k [MODEL=… STEPS=… CONFIG=file.yaml OUT=dir PROFILE=smoke|full DATA=file ARGS='grpo.beta=0.04']
#   make test

RECIPE ?= gsm8k
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: install train test clean

$(STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh

install: $(STAMP)

train: $(STAMP)
	$(PY) -m kit train $(RECIPE) \
		$(if $(MODEL),--model $(MODEL)) $(if $(STEPS),--steps $(STEPS)) $(if $(CONFIG),--config $(CONFIG)) \
		$(if $(OUT),--out $(OUT)) $(if $(PROFILE),--profile $(PROFILE)) $(if $(DATA),--data $(DATA)) $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf .venv .pytest_cache outputs
