#!/bin/bash
# One seed of benchmarks/learning.py on a lent GPU machine (issue 32), as one `device` call:
#
#   BUDGET=470 bash benchmarks/device/learning_seed.sh      (with carry: [".whl"])
#
# Fill .whl/ here first with the wheels listed in shared/notes/DEVICE.md (common.sh installs
# them). Back under $OUT: the log, then in learn.tgz summary.json, every stage's log and metrics
# and the SFT checks' departures from the gold (greedy_checks.jsonl), and the SFT model in
# sft-model.tgz. Settings: FAMILY, SEED, BUDGET (seconds for learning.py), GRPO_STEPS,
# EVAL_TASKS, SFT_ARGS, TINY_ARGS (e.g. '--hidden 256'), WARM_START (a carried SFT model folder:
# no tiny-model or SFT stage, see sft_continue.sh); DEVICE=cpu runs it here as a smoke test.
# Scoring and the GRPO arms use transformers: the device has no vLLM (DEVICE.md).
set -u
source "$(dirname "$0")/common.sh"
start=$(date +%s)
device_setup
echo "setup $(( $(date +%s) - start )) s"
timeout "${BUDGET:-470}" python3 benchmarks/learning.py --family "${FAMILY:-tau-retail}" \
  --seed "${SEED:-0}" --device "${DEVICE:-cuda}" --parallel 2 --out /tmp/learn \
  --eval-backend transformers --grpo-backend transformers \
  ${WARM_START:+--warm-start "$WARM_START"} \
  --grpo-steps "${GRPO_STEPS:-40}" --eval-tasks "${EVAL_TASKS:-100}" --tiny-args "${TINY_ARGS:-}" \
  --sft-args "${SFT_ARGS:---max_steps 2400 --eval_every 200 --eval_every_near 50 --eval_tasks 40 --per_device_train_batch_size 16 --gradient_accumulation_steps 1 --max_tasks 6000 --gold_workers 12}" \
  > "$OUT/learning.log" 2>&1
echo "learning.py exit $? after $(( $(date +%s) - start )) s"
pack_run /tmp/learn "$OUT/learn.tgz"
(cd /tmp/learn && tar czf "$OUT/sft-model.tgz" sft 2>/dev/null)
tail -30 "$OUT/learning.log"
