#!/bin/bash
# Two variants of one benchmarks/learning.py seed side by side on a lent GPU, as one `device`
# call (issue 32): the tiny models leave most of the GPU idle, so two runs share it at little
# cost to each, and an A/B of SFT settings fits one session's device time.
#
#   BUDGET=480 bash benchmarks/device/learning_pair.sh      (with carry: [".whl"]; timeout_s 560)
#
# Setup as in learning_seed.sh (fill .whl/ first). Variant A gets SFT_ARGS plus A_ARGS, variant B
# SFT_ARGS plus B_ARGS (default: the agent's tokens against the whole transcript, --loss_on);
# A_TINY and B_TINY give each its own `tool-envs tiny-model` flags (default TINY_ARGS), e.g. a
# model-size A/B: A_ARGS="--loss_on policy" B_ARGS="--loss_on policy" A_TINY="--hidden 256"
# B_TINY="--hidden 512". VARIANTS="a b c" adds a third run with C_ARGS and C_TINY (default
# --loss_on policy), e.g. C_TINY="--copy-steps 0 --copy-reach-steps 0" (tau-retail's tiny
# model without its copy pretraining). It may run beside sft_continue.sh (one install: common.sh).
# DEVICE=cpu runs it here as a smoke test.
# Back under $OUT: a.log, b.log, ... and a.tgz, b.tgz, ... (summary, logs, metrics,
# greedy_checks.jsonl).
set -u
source "$(dirname "$0")/common.sh"
start=$(date +%s)
device_setup
echo "setup $(( $(date +%s) - start )) s"
sft="${SFT_ARGS:---max_steps 2400 --eval_every 200 --eval_every_near 50 --eval_tasks 40 --per_device_train_batch_size 16 --gradient_accumulation_steps 1 --max_tasks 6000 --gold_workers 6}"
for variant in ${VARIANTS:-a b}; do
  args_name="${variant^^}_ARGS" tiny_name="${variant^^}_TINY"
  default_args=$([ "$variant" = b ] && echo "--loss_on transcript" || echo "--loss_on policy")
  extra="${!args_name:-$default_args}"
  tiny="${!tiny_name:-${TINY_ARGS:-}}"
  timeout "${BUDGET:-480}" python3 benchmarks/learning.py --family "${FAMILY:-tau-retail}" \
    --seed "${SEED:-0}" --device "${DEVICE:-cuda}" --parallel 2 --out "/tmp/learn-$variant" \
    --eval-backend transformers --grpo-backend transformers \
    --grpo-steps "${GRPO_STEPS:-40}" --eval-tasks "${EVAL_TASKS:-100}" --tiny-args "$tiny" \
    --sft-args "$sft $extra" > "$OUT/$variant.log" 2>&1 &
done
wait
echo "all done after $(( $(date +%s) - start )) s"
for variant in ${VARIANTS:-a b}; do
  pack_run "/tmp/learn-$variant" "$OUT/$variant.tgz"
  echo "== $variant"; grep -aE "^step .*(greedy|departures|teacher-forced)" "/tmp/learn-$variant/logs/sft.log" | tail -9
  grep -E "VERDICT|stopped short" "$OUT/$variant.log"
done
