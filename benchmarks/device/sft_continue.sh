#!/bin/bash
# One leg of a tau SFT warm start that is longer than a session's device time (issue 32): train
# on from a model folder carried in, bring the model back, carry it in again next time. Once a
# leg's checks reach the stop target, `WARM_START=<folder> learning_seed.sh` runs the GRPO arms
# and the held-out comparison from it.
#
#   MODEL=outputs/tau-sft STEPS=2000 EVAL_EVERY=400 BUDGET=520 bash benchmarks/device/sft_continue.sh
#   (with carry: [".whl", MODEL]; timeout_s BUDGET + 40)
#
# The gold comes from learning.py's tau-retail task set, written on the device (too large to
# carry: the whole tree must stay under 64 MiB), unless TASKS names a carried one. Each leg
# starts a fresh AdamW at the config's constant learning rate, checks on the first EVAL_TASKS of
# the test split, and stops at the recipe's stop target (STOP_AT, 0.3 as in learning.py),
# keeping the checked weights nearest it. A leg cut by BUDGET saves nothing: size STEPS to fit
# (800 steps took 163 s of an H200 call with setup, gold rows and 4 checks of 40 tasks; ~7
# steps a second at batch 16). Back under $OUT: sft.log, greedy_checks.jsonl (success,
# departures and the gold probe per check), metrics.jsonl and model.tgz, which unpacks into the
# folder to carry next time. DEVICE=cpu: a smoke test here (with .venv/bin first on PATH,
# MAX_TASKS=50 STEPS=4 EVAL_EVERY=2 EVAL_TASKS=2 BATCH=2).
set -u
source "$(dirname "$0")/common.sh"
start=$(date +%s)
device_setup
echo "setup $(( $(date +%s) - start )) s"
use_cpu=$([ "${DEVICE:-cuda}" = cpu ] && echo true || echo false)
if [ -z "${TASKS:-}" ]; then  # learning.py's tau-retail task set (its _retail_tasks)
  TASKS=/tmp/retail-tasks
  python3 -m tool_envs.cli tau-tasks --domain retail --out "$TASKS" --split train=20000 \
    --split test=100 --split heldout=100 --category cancel --prompt compact --databases 40 --seed 0
fi
timeout "${BUDGET:-230}" python3 recipes/train_sft.py --config recipes/configs/tau_retail_cpu_sft.yaml \
  --model_name_or_path "$MODEL" --tasks "$TASKS" --output_dir /tmp/sft-leg --use_cpu "$use_cpu" \
  --max_steps "${STEPS:-800}" --eval_every "${EVAL_EVERY:-200}" --eval_every_near "${EVAL_EVERY:-200}" \
  --eval_tasks "${EVAL_TASKS:-40}" --per_device_train_batch_size "${BATCH:-16}" \
  --gradient_accumulation_steps 1 --max_tasks "${MAX_TASKS:-8000}" --gold_workers 8 \
  --stop_at_success "${STOP_AT:-0.3}" > "$OUT/sft.log" 2>&1
echo "train_sft.py exit $? after $(( $(date +%s) - start )) s (1: the stop target not reached)"
cp /tmp/sft-leg/greedy_checks.jsonl /tmp/sft-leg/metrics.jsonl "$OUT/" 2>/dev/null
(cd /tmp/sft-leg && tar czf "$OUT/model.tgz" --exclude='*.jsonl' .)
grep -aE "^step .*(greedy|departures|teacher-forced)" "$OUT/sft.log" | tail -12
