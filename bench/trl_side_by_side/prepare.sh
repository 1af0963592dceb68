#!/usr/bin/env bash
# Fill bench/trl_side_by_side/.carry/ (git-ignored through .git/info/exclude) with what the GPU call needs from outside
# the repository: the TRL peer benchmark (a folder holding bench_trl.py, which runs TRL 1.16's GRPOTrainer in GSPO mode,
# its wheels.txt and an offline Qwen2.5 tokenizer/), and the Python 3.12 wheels the GPU image lacks. Run it once before
# the GPU call; it prints the folder's size, which must stay well under the 64 MiB a call may carry (with the ~3 MB
# tree).
#   TRL_SRC=/path/to/trl_gspo bash bench/trl_side_by_side/prepare.sh      (or: bash prepare.sh /path/to/trl_gspo)
set -euo pipefail
H=$(cd "$(dirname "$0")" && pwd); C=$H/.carry; TRL_SRC=${1:-${TRL_SRC:-}}
[[ -n $TRL_SRC ]] || { echo "prepare.sh: give the TRL peer benchmark's folder (bench_trl.py, wheels.txt, tokenizer/): \
TRL_SRC=DIR or an argument" >&2; exit 2; }
for f in bench_trl.py wheels.txt tokenizer; do
  [[ -e $TRL_SRC/$f ]] || { echo "prepare.sh: $TRL_SRC/$f does not exist \
(TRL_SRC must hold bench_trl.py, wheels.txt, tokenizer/)" >&2; exit 2; }
done
R=$(git -C "$H" rev-parse --show-toplevel)
grep -qxF /bench/trl_side_by_side/.carry/ "$R/.git/info/exclude" \
  || echo /bench/trl_side_by_side/.carry/ >> "$R/.git/info/exclude"
mkdir -p "$C/wheels"
cp "$TRL_SRC/bench_trl.py" "$TRL_SRC/wheels.txt" "$C/" && rm -rf "$C/tokenizer" \
  && cp -r "$TRL_SRC/tokenizer" "$C/tokenizer" && chmod -R u+w "$C"
# TRL's own list (wheels.txt), then what omni_gspo imports beyond the image: fastcore, audio (soxr, soundfile + cffi +
# pycparser), the math reward (math-verify, latex2sympy2_extended, antlr4), the dashboard (plotly, ipywidgets, IPython
# and their dependencies), each pinned to the version this project's venv runs.
WHEELS=(trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
        fastcore==1.14.5 soxr==1.1.0 soundfile==0.14.0 cffi==2.1.1 pycparser==3.12
        math-verify==0.9.0 latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
        plotly==7.1.0 ipywidgets==8.1.9 widgetsnbextension==4.0.16 jupyterlab-widgets==3.0.17 comm==0.2.3
        ipython==9.18.1 ipython-pygments-lexers==1.1.1 traitlets==5.16.1 jedi==0.20.1 parso==0.8.7
        matplotlib-inline==0.2.2 pexpect==4.9.0 ptyprocess==0.7.0 prompt-toolkit==3.0.53 wcwidth==0.9.4
        stack-data==0.6.3 asttokens==3.0.2 executing==2.3.0 pure-eval==0.2.4)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$C/wheels" "${WHEELS[@]}"
n=$(ls "$C/wheels" | wc -l); echo "wheels: $n (asked for ${#WHEELS[@]})"
[[ $n == "${#WHEELS[@]}" ]] || { echo "prepare.sh: expected ${#WHEELS[@]} wheels in $C/wheels, found $n \
(two versions of one package, or a stale file?)"; exit 1; }
du -sh "$C" "$C/wheels" "$C/tokenizer"
bytes=$(du -sb "$C" | cut -f1)
(( bytes < 55 * 1024 * 1024 )) || { echo "prepare.sh: $C is $bytes bytes, over 55 MiB"; exit 1; }
