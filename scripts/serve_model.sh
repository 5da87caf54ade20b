#!/usr/bin/env bash
# serve_model.sh HOST PORT MODEL_DIR [OPTION...]: a local Hugging Face model folder (python -m steptp.train's
# output, or any causal LM) behind an OpenAI-compatible Chat Completions server, `transformers serve` from
# .venv-train (scripts/deps-train.sh), with the hub switched off: nothing is downloaded, the folder is loaded at
# start and answers the requests whose model is that folder's absolute path (others get HTTP 400 "Server is pinned
# to ..."), so give optimize `--model "$(realpath MODEL_DIR)"`. OPTIONs go to `transformers serve`
# (e.g. --device cuda:0, --dtype bfloat16). Then:
#   build/src/steptp optimize OUT/manifest.json --policy llm --base-url http://HOST:PORT/v1 --model "$(realpath MODEL_DIR)" ...
# On a GPU machine vLLM serves the same folder faster (docs/train.md).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: scripts/serve_model.sh HOST PORT MODEL_DIR [transformers serve options...]" >&2
  exit 2
fi
host=$1 port=$2 model=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
serve="$root/.venv-train/bin/transformers"
if [ ! -x "$serve" ]; then
  echo "serve_model: $serve is missing (scripts/deps-train.sh creates .venv-train)" >&2
  exit 1
fi
if [ ! -f "$model/config.json" ]; then
  echo "serve_model: $model: not a Hugging Face model folder (no config.json)" >&2
  exit 1
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
exec "$serve" serve --host "$host" --port "$port" "$@" "$(cd "$model" && pwd)"
