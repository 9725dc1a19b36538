#!/bin/bash
# One seed of benchmarks/learning.py on a lent GPU machine (issue 32), as one `device` call:
#
#   BUDGET=470 bash benchmarks/device/learning_seed.sh      (with carry: [".whl"])
#
# The machine has torch, transformers, accelerate, peft, pyarrow and matplotlib but no registry:
# fill .whl/ here first with the pure-Python and cp312 wheels listed in shared/notes/DEVICE.md
# (trl, datasets, gymnasium, openai, pydantic, ...). Everything the run wrote comes back under
# $OUT: the log, then in learn.tgz summary.json, every stage's log and metrics and the SFT
# checks' departures from the gold (greedy_checks.jsonl), and the SFT model in sft-model.tgz. Settings: FAMILY, SEED, BUDGET (seconds
# for learning.py), GRPO_STEPS, EVAL_TASKS, SFT_ARGS, TINY_ARGS (e.g. '--hidden 256').
set -u
start=$(date +%s)
pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | grep -v "root user" | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
echo "setup $(( $(date +%s) - start )) s"
timeout "${BUDGET:-470}" python3 benchmarks/learning.py --family "${FAMILY:-tau-retail}" \
  --seed "${SEED:-0}" --device cuda --parallel 2 --out /tmp/learn \
  --grpo-steps "${GRPO_STEPS:-40}" --eval-tasks "${EVAL_TASKS:-100}" --tiny-args "${TINY_ARGS:-}" \
  --sft-args "${SFT_ARGS:---max_steps 2400 --eval_every 200 --eval_every_near 50 --eval_tasks 40 --per_device_train_batch_size 16 --max_tasks 6000 --gold_workers 12}" \
  > "$OUT/learning.log" 2>&1
echo "learning.py exit $? after $(( $(date +%s) - start )) s"
cd /tmp/learn || exit 1
# Few files come back from a device call, so the results travel as two tarballs.
find . \( -name '*.log' -o -name '*.json' -o -name '*.jsonl' -o -name '*.png' \) -size -5M \
  -not -path './tasks/*' -print0 | tar czf "$OUT/learn.tgz" --null -T -
tar czf "$OUT/sft-model.tgz" sft 2>/dev/null
tail -30 "$OUT/learning.log"
