"""What people read after a run: a terminal table, ``summary.json``, a pass^k plot, an HTML report.

The HTML page is self-contained (no external asset; a few lines of inline script for the
"only failures" switch), so it can be attached to an issue or opened from a remote machine's
copy; every model-written string in it is escaped.
"""

from __future__ import annotations

import html
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tool_envs.eval.metrics import is_success, summarize, user_fault_of
from tool_envs.eval.result import EvalResult
from tool_envs.rollout.episode import TaskRows

__all__ = [
    "format_table",
    "format_user_faults",
    "plot_pass_hat_k",
    "write_html",
    "write_reports",
]

SUMMARY = "summary.json"
PLOT = "pass_hat_k.png"
HTML = "report.html"


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _k_columns(summary: Mapping[str, Any]) -> list[str]:
    """Which k to show: 1, 2, 4, 8, ... and the largest the trials support."""
    k_max = summary["overall"]["min_trials_per_task"]
    ks = [k for k in (1, 2, 4, 8, 16, 32) if k <= k_max]
    if k_max and k_max not in ks:
        ks.append(k_max)
    return [str(k) for k in ks]


def _tokens(group: Mapping[str, Any], prefix: str) -> str:
    prompt = group.get(f"{prefix}prompt_tokens")
    return "-" if prompt is None else f"{prompt}/{group.get(f'{prefix}completion_tokens')}"


def format_table(summary: Mapping[str, Any]) -> str:
    """A plain-text table: one row per env, then the overall row.

    Columns that would be empty everywhere are left out: cost without prices, the simulated
    user's and the judge's tokens where no LLM helper was called, void trials where none was,
    the user-fault rate where no simulated user was checked. Where one was, a second table
    gives the user faults per env and user strategy.
    """
    ks = _k_columns(summary)
    k_max = ks[-1] if ks else None
    overall = summary["overall"]
    priced = overall.get("cost") is not None
    helpers = [h for h in ("user", "judge") if overall.get(f"{h}_calls") is not None]
    voided = bool(overall.get("void_trials"))
    checked = overall.get("user_fault_trials") is not None
    header = ["env", "tasks", "trials", "success", "reward"]
    header += [f"pass^{k}" for k in ks]
    header += [f"pass@{k_max}"] if k_max else []
    header += ["turns", "tools", "parse_err", "env_err", "failed"]
    header += ["void"] if voided else []
    header += ["user_fault"] if checked else []
    header += ["tokens in/out"] + [f"{h} in/out" for h in helpers]
    header += ["cost"] if priced else []
    rows = []
    groups = list(summary["envs"].items())
    if len(groups) != 1:
        groups.append(("overall", summary["overall"]))
    for name, group in groups:
        row = [name, *_score_cells(group, ks)]
        row += [_fmt(group.get("void_trials", 0))] if voided else []
        row += [_fmt(group.get("user_fault_rate"))] if checked else []
        row += [_tokens(group, "")] + [_tokens(group, f"{h}_") for h in helpers]
        row += [f"{group['cost']:.4f}"] if priced else []
        rows.append(row)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    rule = "-" * len(line(header))
    table = "\n".join([line(header), rule, *(line(r) for r in rows)])
    faults = summary.get("user_faults") or []
    return table + ("\n\n" + format_user_faults(faults) if faults and checked else "")


def format_user_faults(rows: TaskRows) -> str:
    """User faults per env and user strategy: trials, faulted trials, rate, and by kind."""
    header = ["env", "user", "trials", "user_faults", "rate", "by kind"]
    lines = [
        [
            str(row["env"]).removeprefix("tool_envs/"),
            str(row["user_strategy"]),
            _fmt(row["trials"]),
            _fmt(row["user_fault_trials"]),
            _fmt(row["user_fault_rate"]),
            ", ".join(f"{kind} {n}" for kind, n in row["user_faults"].items()) or "-",
        ]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:2], widths[:2], strict=True)]
        right = [c.rjust(w) for c, w in zip(cells[2:5], widths[2:5], strict=True)]
        return "  ".join([*left, *right, cells[5]]).rstrip()

    title = "user faults per env and user strategy (trials the simulated user spoiled: void)"
    return "\n".join([title, line(header), "-" * len(line(header)), *(line(r) for r in lines)])


def plot_pass_hat_k(summary: Mapping[str, Any], path: Path) -> Path | None:
    """pass^k (solid) and pass@k (dashed) against k, one colour per env; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn(
            "matplotlib is not installed, so no pass^k plot was drawn "
            "(pip install matplotlib, or 'tool-envs[train]')",
            stacklevel=2,
        )
        return None
    groups = dict(summary["envs"])
    if len(groups) > 1:
        groups["overall"] = summary["overall"]
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    if not any(group["pass_hat_k"] for group in groups.values()):
        axes.text(0.5, 0.5, "no finished trials yet", ha="center", transform=axes.transAxes)
    for index, (name, group) in enumerate(groups.items()):
        ks = [int(k) for k in group["pass_hat_k"]]
        if not ks:
            continue
        colour = f"C{index}"
        label = name.removeprefix("tool_envs/")
        axes.plot(ks, list(group["pass_hat_k"].values()), "o-", color=colour, label=f"{label}")
        axes.plot(ks, list(group["pass_at_k"].values()), "--", color=colour, alpha=0.5)
    axes.set_xlabel("k (trials)")
    axes.set_ylabel("pass^k (solid), pass@k (dashed)")
    axes.set_ylim(-0.02, 1.02)
    axes.xaxis.get_major_locator().set_params(integer=True)
    model = summary.get("run", {}).get("model") or summary.get("run", {}).get("agent", "")
    axes.set_title(f"pass^k per env ({model})")
    axes.grid(alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.task { border-left: 4px solid #ccc; padding-left: 0.8em; margin: 1em 0; }
.task.all { border-color: #2a2; } .task.some { border-color: #d90; }
.task.none { border-color: #c22; }
details { margin: 0.3em 0; } summary { cursor: pointer; }
.ok { color: #2a2; font-weight: bold; } .fail { color: #c22; font-weight: bold; }
.void { color: #777; font-weight: bold; }
.msg { margin: 0.4em 0 0.4em 1em; } .role { font-weight: bold; font-size: 0.85em; color: #555; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: 0.4em;
      margin: 0.1em 0; }
.meta { color: #666; font-size: 0.9em; }
.scroll { overflow-x: auto; margin-bottom: 1.5em; } .scroll table { margin-bottom: 0; }
table.summary { font-size: 0.9em; } table.summary td, table.summary th { padding: 0.25em 0.45em; }
table.summary th { background: #f3f3f3; } table.summary tbody th { white-space: nowrap; }
table.summary tr.group th { background: #e4e9f2; text-align: left; font-size: 0.85em; }
table.summary tbody tr:nth-child(even) td { background: #fafafa; }
table.config th { text-align: left; background: #f3f3f3; font-weight: normal; }
table.config td { text-align: left; font-family: ui-monospace, monospace; font-size: 0.9em; }
.note { background: #f5f7fb; border-left: 4px solid #89a; padding: 0.5em 0.8em; }
figure { margin: 0 0 1.5em 0; } figcaption { color: #666; font-size: 0.9em; }
body.only-failures .task.all, body.only-failures details.trial.passed { display: none; }
"""


def _pre(text: Any) -> str:
    return f"<pre>{html.escape(str(text))}</pre>"


def _message_html(message: Mapping[str, Any]) -> str:
    role = str(message.get("role", "?"))
    name = f" {message['name']}" if message.get("name") else ""
    parts = [f'<div class="msg"><span class="role">{html.escape(role + name)}</span>']
    if message.get("raw") is not None:
        parts.append(_pre(message["raw"]))
    elif message.get("content"):
        parts.append(_pre(message["content"]))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        parts.append(_pre(f"-> {function.get('name')}({arguments})"))
    parts.append("</div>")
    return "".join(parts)


def _trial_html(record: Mapping[str, Any], threshold: float) -> str:
    ok = is_success(record, threshold)
    badge = '<span class="ok">pass</span>' if ok else '<span class="fail">fail</span>'
    if user_fault_of(record):
        badge = '<span class="void">void: the user broke its scenario</span>'
    reason = (record.get("reward_info") or {}).get("reason") or record.get("error") or ""
    if record.get("truncated"):
        reason = reason or "turn limit reached"
    head = (
        f"trial {int(record['trial'])} {badge} reward {_fmt(float(record.get('reward') or 0))}"
        f", {record.get('turns', 0)} turns, {html.escape(str(reason))}"
    )
    body = [_message_html(m) for m in record.get("messages") or []]
    details = {
        k: record.get(k)
        for k in ("reward_info", "stats", "usage", "helper_usage", "seed", "error")
        if k in record
    }
    body.append(f'<div class="meta">{_pre(json.dumps(details, indent=1, default=str))}</div>')
    kind = "trial passed" if ok else "trial failed"
    return f'<details class="{kind}"><summary>{head}</summary>{"".join(body)}</details>'


def _summary_columns(summary: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    ks = _k_columns(summary)
    header = ["tasks", "trials", "success", "reward"]
    header += [f"pass^{k}" for k in ks] + ([f"pass@{ks[-1]}"] if ks else [])
    header += ["turns", "tool calls", "parse errors", "env errors", "failed"]
    header += ["user fault"] if summary["overall"].get("user_fault_trials") is not None else []
    return header, ks


def _score_cells(group: Mapping[str, Any], ks: Sequence[str]) -> list[str]:
    """The cells every summary table shows for an env (or overall): tasks, trials, success,
    reward, pass^k for each k, pass@ the largest k, turns, tools, errors and failed trials."""
    cells = [
        _fmt(group["tasks"]),
        _fmt(group["trials"]),
        _fmt(group["success_rate"]),
        _fmt(group["mean_reward"]),
    ]
    cells += [_fmt(group["pass_hat_k"].get(k)) for k in ks]
    cells += [_fmt(group["pass_at_k"].get(ks[-1]))] if ks else []
    return [
        *cells,
        _fmt(group["mean_turns"], 2),
        _fmt(group["mean_tool_calls"], 2),
        _fmt(group["parse_errors"]),
        _fmt(group["env_errors"]),
        _fmt(group["failed_trials"]),
    ]


def _summary_row(
    name: str, group: Mapping[str, Any], ks: Sequence[str], checked: bool = False
) -> str:
    cells = _score_cells(group, ks)
    cells += [_fmt(group.get("user_fault_rate"))] if checked else []
    name = name.removeprefix("tool_envs/")
    return f"<tr><th>{html.escape(name)}</th>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _summary_table(
    summary: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    categories: Mapping[tuple[str, str], str],
    threshold: float,
) -> str:
    """Per env (and overall), then per task category where the tasks have one."""
    header, ks = _summary_columns(summary)
    checked = summary["overall"].get("user_fault_trials") is not None
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["", *header])
    rows = [f'<tr class="group"><th colspan="{len(header) + 1}">per env</th></tr>']
    groups = list(summary["envs"].items())
    if len(groups) != 1:
        groups.append(("overall", summary["overall"]))
    rows += [_summary_row(name, group, ks, checked) for name, group in groups]
    by_category: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        category = categories.get((record["env_id"], str(record["task_id"])))
        if category:
            by_category.setdefault(category, []).append(record)
    if by_category:
        rows.append(f'<tr class="group"><th colspan="{len(header) + 1}">per category</th></tr>')
        for category, rows_of in sorted(by_category.items()):
            group = summarize(rows_of, threshold=threshold)["overall"]
            rows.append(_summary_row(category, group, ks, checked))
    body = "".join(rows)
    table = f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="scroll">{table}</div>'


def _user_fault_section(summary: Mapping[str, Any]) -> str:
    """User faults per env and user strategy, where a simulated user was checked."""
    rows = summary.get("user_faults") or []
    if not rows:
        return ""
    head = "".join(
        f"<th>{h}</th>" for h in ("env", "user", "trials", "user faults", "rate", "by kind")
    )
    body = "".join(
        "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            html.escape(str(row["env"]).removeprefix("tool_envs/")),
            html.escape(str(row["user_strategy"])),
            _fmt(row["trials"]),
            _fmt(row["user_fault_trials"]),
            _fmt(row["user_fault_rate"]),
            html.escape(", ".join(f"{k} {n}" for k, n in row["user_faults"].items()) or "-"),
        )
        for row in rows
    )
    return (
        "<h2>User faults</h2><p>Trials the simulated user spoiled (it broke its scenario): "
        "void, in no score.</p>"
        f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _config_table(run: Mapping[str, Any]) -> str:
    cells = []
    for key, value in run.items():
        if value is None or value == {} or value == []:
            continue
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        cells.append(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(shown)}</td></tr>")
    return f'<table class="config">{"".join(cells)}</table>'


def _pass_k_section(summary: Mapping[str, Any], plot: str | None) -> str:
    k_max = summary["overall"]["min_trials_per_task"]
    if k_max <= 1:
        return (
            '<p class="note">One trial per task, so pass^k and pass@k equal the success rate '
            "and are not drawn. Run more trials (<code>--trials 4</code>) to see how reliably "
            "tasks are solved.</p>"
        )
    if plot is None:
        return ""
    return (
        f'<figure><img src="{html.escape(plot, quote=True)}" alt="pass^k and pass@k against k" '
        'width="640"><figcaption>pass^k (solid): every one of k trials passes; pass@k (dashed): '
        "at least one does.</figcaption></figure>"
    )


_SCRIPT = """
document.getElementById("only-failures").addEventListener("change", function (event) {
  document.body.classList.toggle("only-failures", event.target.checked);
});
"""


def write_html(
    records: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    path: Path,
    task_order: Sequence[str] = (),
    threshold: float = 1.0,
    categories: Mapping[tuple[str, str], str] | None = None,
    plot: str | None = PLOT,
) -> Path:
    """One page: the run's settings, the summary per env and per task category, pass^k, then
    every env, task and trial with its whole conversation, tasks with failed trials first.

    ``categories`` maps (env id, task id) to the task's category (``extra_info`` category or
    domain); ``plot`` is the pass^k image's path relative to the page (None: no image).
    """
    run = summary.get("run", {})
    title = f"tool-envs eval: {run.get('model') or run.get('agent', '')}"
    position = {task_id: i for i, task_id in enumerate(task_order)}
    by_env: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for record in records:
        tasks = by_env.setdefault(record["env_id"], {})
        tasks.setdefault(str(record["task_id"]), []).append(record)
    failed = sum(not is_success(r, threshold) for r in records)
    out = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>',
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Summary</h2>",
        _summary_table(summary, records, categories or {}, threshold),
        _pass_k_section(summary, plot),
        _user_fault_section(summary),
        "<details><summary>Run settings</summary>",
        _config_table(run),
        "</details>",
        f"<h2>Trials</h2><p>{failed} of {len(records)} trials failed; tasks with failures come "
        'first. <label><input type="checkbox" id="only-failures"> show only failed trials'
        "</label></p>",
    ]
    for env_id, tasks in by_env.items():
        out.append(f"<h3>{html.escape(env_id)}</h3>")

        def order(item: tuple[str, list[Mapping[str, Any]]]) -> tuple[int, int]:
            task_id, trials = item
            passed = sum(is_success(r, threshold) for r in trials)
            return (passed == len(trials), position.get(task_id, len(position)))

        for task_id, trials in sorted(tasks.items(), key=order):
            passed = sum(is_success(r, threshold) for r in trials)
            kind = "all" if passed == len(trials) else "some" if passed else "none"
            anchor = html.escape(f"{env_id}:{task_id}", quote=True)
            category = (categories or {}).get((env_id, task_id))
            label = f" <small>({html.escape(category)})</small>" if category else ""
            out.append(f'<div class="task {kind}" id="{anchor}">')
            out.append(f"<h4>{html.escape(task_id)}: {passed}/{len(trials)} passed{label}</h4>")
            ordered = sorted(trials, key=lambda r: (is_success(r, threshold), int(r["trial"])))
            out.extend(_trial_html(r, threshold) for r in ordered)
            out.append("</div>")
    out.append(f"<script>{_SCRIPT}</script></body></html>")
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def write_reports(
    result: EvalResult,
    task_order: Sequence[str] = (),
    categories: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Path]:
    """``summary.json``, ``pass_hat_k.png`` (with several trials per task) and ``report.html``
    in the run's folder."""
    threshold = float(result.summary.get("run", {}).get("success_threshold", 1.0))
    files = {"trajectories": result.out / "trajectories.jsonl"}
    summary_path = result.out / SUMMARY
    summary_path.write_text(
        json.dumps(result.summary, indent=2, default=str) + "\n", encoding="utf-8"
    )
    files["summary"] = summary_path
    plot = None
    if result.summary["overall"]["min_trials_per_task"] > 1:  # one trial: a single dot
        plot = plot_pass_hat_k(result.summary, result.out / PLOT)
    if plot is not None:
        files["plot"] = plot
    files["html"] = write_html(
        result.records,
        result.summary,
        result.out / HTML,
        task_order,
        threshold,
        categories=categories,
        plot=PLOT if plot is not None else None,
    )
    return files
