"""Run in the OpenEnv venv (openenv==0.10.0, no tool_envs): OpenEnv's own GenericEnvClient plays
full episodes against a ``tool-envs serve`` server and prints what it saw as JSON.

Usage: python play_with_envclient.py URL EPISODES.json
EPISODES.json: [{"seed": int, "task": <row>, "turns": ["assistant text", ...]}, ...]
"""

import json
import sys

from openenv.core import GenericEnvClient


def main() -> None:
    url, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as file:
        episodes = json.load(file)
    results = []
    with GenericEnvClient(base_url=url).sync() as client:
        for episode in episodes:
            first = client.reset(seed=episode["seed"], options={"task": episode["task"]})
            steps = []
            for turn in episode["turns"]:
                result = client.step({"text": turn})
                steps.append(
                    {
                        "observation": result.observation,
                        "reward": result.reward,
                        "done": result.done,
                    }
                )
            state = client.state()
            results.append(
                {
                    "reset": {"observation": first.observation, "done": first.done},
                    "steps": steps,
                    "state": state,
                }
            )
        try:
            client.step({"colour": "red"})
        except RuntimeError as exc:  # OpenEnv's client raises on an error frame
            results.append({"bad_action_error": str(exc)})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
