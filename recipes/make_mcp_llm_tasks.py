"""Write MCP-v0 tasks by an LLM to a JSONL file the recipes read as a task source.

    export OPENAI_API_KEY=...        # and OPENAI_BASE_URL for another OpenAI-compatible server
    python recipes/make_mcp_llm_tasks.py --out outputs/mcp-llm-tasks.jsonl --samples 200

The model sees the tools of MCP-v0's servers (the built-in Python server, mcp-server-time,
mcp-server-git: started here to list their tools) and writes one task a request: a question,
the gold tool sequence and the answer (:func:`tool_envs.mcp.llm_tasks.generate_llm_tasks`,
which checks every step against the tool schemas and says why it refused a task). The rows go
beside the rule-based task set in a recipe's ``tasks`` (``recipes/configs/
mcp_research_qwen3_4b.yaml``). Exits 1, writing nothing, when no task passed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    parser.add_argument("--samples", type=int, default=10, help="requests to the model")
    parser.add_argument("--model", help="model name (default: $OPENAI_MODEL or gpt-4o-mini)")
    parser.add_argument("--max-tools", type=int, default=3, help="most calls in a gold sequence")
    parser.add_argument("--split", default="train", help="split named in the rows' ids")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error(f"--samples must be at least 1, got {args.samples}")

    import gymnasium as gym

    import tool_envs
    from tool_envs.data import encode_row
    from tool_envs.mcp.llm_tasks import generate_llm_tasks

    gym.register_envs(tool_envs)
    env = gym.make("tool_envs/MCP-v0")
    try:
        tools = {name: env.unwrapped.toolset_for([name]).schemas for name in env.unwrapped.servers}
    finally:
        env.close()
    schemas = {name: [s["function"] for s in listed] for name, listed in tools.items()}
    result = generate_llm_tasks(
        schemas,
        n_samples=args.samples,
        model=args.model,
        max_tools=args.max_tools,
        split=args.split,
    )
    for sample, reason in result.rejected + result.failed:
        print(f"sample {sample}: {reason}", file=sys.stderr)
    if result.stopped:
        print(f"stopped early: {result.stopped}", file=sys.stderr)
    if not result.rows:
        print("no task passed validation; nothing written", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(encode_row(row), ensure_ascii=False) for row in result.rows]
    args.out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(
        f"{len(result.rows)} tasks written to {args.out} ({len(result.rejected)} refused, "
        f"{len(result.failed)} requests failed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
