"""How well the scripted user's act classifier reads agent messages it was not trained on.

Each labelled wording file is left out in turn: the classifier
(:func:`tool_envs.tau.users.acts.train_act_classifier`) is trained on the other shipped files and
scores the left-out one. The held-back files of ``tests/data/user_wordings/`` are never trained
on; they are scored by the classifier trained on every shipped file, as the scripted user uses
it. "Ended" counts messages that ask something (or hold on) which the classifier reads as a
report, a goodbye or "anything else": the error that ends a correct agent's episode.

    python benchmarks/user_wordings.py
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tool_envs.tau.users.acts import WORDINGS, load_wordings, train_act_classifier

HELD_BACK = Path(__file__).resolve().parent.parent / "tests" / "data" / "user_wordings"
ENDING = {"end", "anything_else"}


def score(model, cases) -> tuple[float, int]:
    """(share of acts read right, messages wrongly read as ending the chat)."""
    predicted = model.predict([case["message"] for case in cases])
    right = sum(p == case["act"] for p, case in zip(predicted, cases, strict=True))
    pairs = zip(predicted, cases, strict=True)
    ended = sum(p in ENDING and case["act"] not in ENDING for p, case in pairs)
    return right / len(cases), ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    shipped = sorted(WORDINGS.glob("*.jsonl"))
    held_back = sorted(HELD_BACK.glob("heldback_*.jsonl"))
    print("| file | messages | acts right | wrongly ending | trained on | fit s |")
    print("|---|---:|---:|---:|---|---:|")
    rows = []
    for left_out in shipped:
        started = time.perf_counter()
        model = train_act_classifier(load_wordings(p for p in shipped if p != left_out))
        fit = time.perf_counter() - started
        cases = load_wordings([left_out])
        right, ended = score(model, cases)
        rows.append((right, len(cases)))
        print(
            f"| {left_out.stem} | {len(cases)} | {right:.2%} | {ended} | the other "
            f"{len(shipped) - 1} files | {fit:.1f} |"
        )
    started = time.perf_counter()
    model = train_act_classifier(load_wordings(shipped))
    fit = time.perf_counter() - started
    for path in held_back:
        cases = load_wordings([path])
        right, ended = score(model, cases)
        print(
            f"| {path.stem} (held back) | {len(cases)} | {right:.2%} | {ended} | all "
            f"{len(shipped)} files | {fit:.1f} |"
        )
    total = sum(n for _, n in rows)
    pooled = sum(right * n for right, n in rows) / total
    print(f"\nEach shipped file left out in turn: {pooled:.2%} of {total} acts right.")


if __name__ == "__main__":
    main()
