# Sourced by the device scripts here (not run on its own).

# The lent machine has torch, transformers, accelerate, peft, pyarrow and matplotlib but no
# registry: install the wheels carried in .whl/ (shared/notes/DEVICE.md lists them).
# Once per machine, under a lock: two scripts started side by side share one install.
device_setup() {
  (
    flock 9
    if [ ! -e /tmp/site/.installed ]; then
      pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | grep -v "root user" | tail -2
      touch /tmp/site/.installed
    fi
  ) 9>/tmp/site.lock
  export PYTHONPATH=/tmp/site:$PWD
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
}

# Few files come back from a device call, so a learning.py run's results travel as one tarball:
# summary.json, every stage's log and metrics, greedy_checks.jsonl (not the task set).
pack_run() {  # pack_run RUN_FOLDER TARBALL
  (cd "$1" && find . \( -name '*.log' -o -name '*.json' -o -name '*.jsonl' -o -name '*.png' \) \
    -size -5M -not -path './tasks/*' -print0 | tar czf "$2" --null -T -)
}
