"""tau2 tasks as task rows: the official splits, ready for ``reset`` and ``datasets``.

A row keeps tau2's own ``evaluation_criteria`` and ``initial_state`` in ``reward_spec`` (the
env rebuilds the tau2 ``Task`` from them, so the reward is computed on exactly what tau2
grades) and, in ``extra_info``, tau2's ``user_scenario`` untouched next to the
``user_scenario`` our user simulators read. tau2 writes ``known_info`` as prose ("Your user id
is mia_li_3668."); the fields a scripted user answers with are parsed out of it, and the prose
stays in ``known_text`` for LLM users.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from typing import Any

from tool_envs.data import encode_row
from tool_envs.errors import TaskRowError
from tool_envs.tau.task import UserScenario
from tool_envs.tau2.domains import ENV_IDS, load_domain

AGENT_INSTRUCTION = (
    "You are a customer service agent. Help the user according to the policy below. In each "
    "turn, either send the user a message or call tools; never make up information."
)

# known_info prose -> the field a scripted user gives when asked for it.
_KNOWN_FIELDS: dict[str, re.Pattern[str]] = {
    "name": re.compile(
        r"\b(?i:you are|your name is|you name is|my name is)\s+([A-Z][\w'-]+(?: [A-Z][\w'-]+)+)"
    ),
    "user_id": re.compile(r"\buser id is\s+([\w-]+)", re.I),
    "email": re.compile(r"\b([\w.+-]+@[\w-]+(?:\.[\w-]+)+)"),
    "zip_code": re.compile(r"\bzip ?code (?:is )?(\d{5})", re.I),
    "phone_number": re.compile(r"\bphone number (?:is )?(\+?\d[\d-]{6,}\d)", re.I),
    "reservation_id": re.compile(
        r"\b(?:confirmation number|reservation id|reservation number) is\s+([A-Z0-9]{6})\b", re.I
    ),
    "order_id": re.compile(r"(#W\d+)"),
}
USER_KEYWORDS: dict[str, tuple[str, ...]] = {
    "phone_number": (
        "phone number",
        "phone",
        "number on the account",
        "line",
        "mobile number",
        "cell number",
        "and number",
    ),
}
_PRONOUNS = {
    "you are": "I am",
    "you're": "I'm",
    "you have": "I have",
    "you've": "I've",
    "you were": "I was",
    "you": "I",
    "your": "my",
    "yours": "mine",
    "yourself": "myself",
}
_CLAUSE_STARTS = frozenset(
    {"and", "but", "so", "if", "when", "because", "since", "as", "then", "while", "or", "that"}
)
_SENTENCE_END = re.compile(r"(?<!i\.e\.)(?<!e\.g\.)(?<=[.!?])\s+")
_YOU_AS_YOUR = re.compile(r"\bYou (?=(?:[a-z]+ ){1,2}(?:is|are|has|was)\b)")
_PRONOUN = re.compile(r"\b(" + "|".join(sorted(_PRONOUNS, key=len, reverse=True)) + r")\b", re.I)


def parse_known_info(text: str) -> dict[str, str]:
    """The fields of tau2's ``known_info`` prose that a scripted user can give."""
    known = {}
    for field, pattern in _KNOWN_FIELDS.items():
        match = pattern.search(text)
        if match:
            known[field] = match.group(1).rstrip(".")
    return known


def opening_line(reason_for_call: str) -> str:
    """The user's first message: the first sentence of the reason for the call, in the first
    person ("You want to cancel reservation EHGLP3." -> "Hi! I want to cancel ...")."""
    first = _SENTENCE_END.split(reason_for_call.strip(), maxsplit=1)[0]
    first = _YOU_AS_YOUR.sub("Your ", first)  # tau2 writes "You mobile data is not working."

    def swap(match: re.Match[str]) -> str:
        word = _PRONOUNS[match.group(1).lower()]
        before = match.string[: match.start()].rstrip()
        if (
            word == "I"
            and before
            and not before.endswith(",")
            and (before.split()[-1].lower() not in _CLAUSE_STARTS)
        ):
            word = "me"  # "told you that" -> "told me that"
        return word if match.start() else word[0].upper() + word[1:]

    return "Hi! " + _PRONOUN.sub(swap, first)


# How agents ask for each user-side (device) tool in their own words; a scripted user does the
# action when one of these, or the action's own instruction, appears in the agent's message.
USER_ACTION_WORDS: dict[str, tuple[str, ...]] = {
    "toggle_airplane_mode": ("airplane mode", "flight mode", "aeroplane mode"),
    "toggle_data": ("mobile data", "cellular data"),
    "toggle_roaming": ("roaming",),
    "toggle_data_saver_mode": ("data saver",),
    "toggle_wifi_calling": ("wi-fi calling", "wifi calling"),
    "set_network_mode_preference": (
        "network mode",
        "network type",
        "network preference",
        "preferred network",
    ),
    "reboot_device": (
        "reboot",
        "restart",
        "turn your phone off and on",
        "turn off your phone",
        "switch off your phone",
        "power cycle",
    ),
    "reseat_sim_card": ("reseat", "remove the sim", "take out the sim", "reinsert"),
    "reset_apn_settings": ("apn",),
    "disconnect_vpn": ("vpn",),
    "grant_app_permission": ("permission",),
    "make_payment": ("make the payment", "make a payment", "pay the bill"),
}


def user_action_instruction(name: str, arguments: Mapping[str, Any]) -> str:
    """How an agent asks for a user-side tool call, e.g. "toggle airplane mode"."""
    words = name.replace("_", " ")
    if arguments:
        words += " (" + ", ".join(f"{k}: {v}" for k, v in arguments.items()) + ")"
    return words


def user_scenario(task: Any) -> UserScenario:
    """Our user scenario for a tau2 ``Task``; the gold user-side actions become the device
    actions a scripted user performs when the agent asks for them."""
    scenario = task.user_scenario
    instructions = scenario.instructions
    if isinstance(instructions, str):
        reason, known, unknown, rules = instructions, "", "", ""
    else:
        reason = instructions.reason_for_call
        known = instructions.known_info or ""
        unknown = instructions.unknown_info or ""
        rules = instructions.task_instructions
    criteria = task.evaluation_criteria
    user_actions = []
    for action in (criteria.actions or []) if criteria is not None else []:
        instruction = user_action_instruction(action.name, action.arguments)
        if action.requestor == "user":
            words = USER_ACTION_WORDS.get(action.name, ())
            user_actions.append(
                {
                    "name": action.name,
                    "arguments": action.arguments,
                    "instruction": instruction,
                    "triggers": [instruction, *words],
                }
            )
    return UserScenario(
        persona=(scenario.persona or "").strip(),
        reason_for_call=reason,
        known_info=parse_known_info(known),
        known_text=known,
        unknown_info=unknown,
        task_instructions=rules,
        user_actions=user_actions,
    )


def system_prompt(policy: str) -> str:
    return f"{AGENT_INSTRUCTION}\n\n<policy>\n{policy}\n</policy>"


def task_row(domain: str, task: Any, split: str | None = None) -> dict[str, Any]:
    """The task row of a tau2 ``Task`` of ``domain``."""
    loaded = load_domain(domain)
    scenario = user_scenario(task)
    task_json = task.model_dump(mode="json", exclude_none=True)
    scenario_json = scenario.model_dump(mode="json")
    info: dict[str, Any] = {
        "id": f"tau2-{domain}-{task.id}",
        "tau2_task_id": task.id,
        "domain": domain,
        "user_scenario": scenario_json,
        "tau2_user_scenario": task_json["user_scenario"],
    }
    if split is not None:
        info["split"] = split
    if task.description is not None and task.description.purpose:
        info["purpose"] = task.description.purpose
    return {
        "prompt": [
            {"role": "system", "content": system_prompt(loaded.policy)},
            {"role": "user", "content": opening_line(scenario.reason_for_call)},
        ],
        "env_id": ENV_IDS[domain],
        "reward_spec": {
            "evaluation_criteria": task_json.get("evaluation_criteria"),
            "initial_state": task_json.get("initial_state"),
        },
        "extra_info": info,
    }


def load_tau2_tasks(domain: str, split: str = "train") -> list[dict[str, Any]]:
    """Task rows of an official tau2 split (``train``, ``test``, ``base``; telecom also
    ``small`` and ``full``). Converted once per process; each call returns fresh copies."""
    return copy.deepcopy(_converted(domain, split))


@functools.cache
def _converted(domain: str, split: str) -> list[dict[str, Any]]:
    return [task_row(domain, task, split) for task in load_domain(domain).tasks(split)]


def tau2_dataset(domain: str, split: str = "train") -> Any:
    """The split as a ``datasets.Dataset`` (nested values JSON-encoded, see ``encode_row``)."""
    from datasets import Dataset

    return Dataset.from_list([encode_row(row) for row in load_tau2_tasks(domain, split)])


# Where each field of tau2's Task comes from in a row, so an error names the row's field.
_TASK_FIELDS = {
    "id": "extra_info.tau2_task_id",
    "user_scenario": "extra_info.tau2_user_scenario",
    "evaluation_criteria": "reward_spec.evaluation_criteria",
    "initial_state": "reward_spec.initial_state",
}


def tau2_task(domain: str, row: Mapping[str, Any]) -> Any:
    """Rebuild the tau2 ``Task`` a row stands for (the reward is computed on it).

    Raises TaskRowError naming the row's field at fault (``reward_spec.evaluation_criteria...``,
    ``extra_info.tau2_user_scenario...``), not just "reward_spec".
    """
    from pydantic import ValidationError

    from tool_envs.tau2.domains import import_tau2

    tasks = import_tau2("tau2.data_model.tasks")
    info, spec = row["extra_info"], row["reward_spec"]
    scenario = info.get("tau2_user_scenario")
    if scenario is None:
        try:
            scenario = {
                "instructions": UserScenario.model_validate(info["user_scenario"]).instruction()
            }
        except (KeyError, TypeError, ValidationError) as exc:
            raise TaskRowError(
                "a tau2 row needs extra_info.tau2_user_scenario (tau2's own) or a valid "
                f"extra_info.user_scenario ({_one_line(exc)})",
                field="extra_info.user_scenario",
            ) from None
    try:
        return tasks.Task.model_validate(
            {
                "id": str(info.get("tau2_task_id", info.get("id", ""))),
                "user_scenario": scenario,
                "evaluation_criteria": spec.get("evaluation_criteria"),
                "initial_state": spec.get("initial_state"),
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(part) for part in error["loc"]]
        field = ".".join([_TASK_FIELDS.get(loc[0], "reward_spec"), *loc[1:]]) if loc else None
        if field is not None and loc[0] == "user_scenario" and "tau2_user_scenario" not in info:
            field = "extra_info.user_scenario" + field[len(_TASK_FIELDS["user_scenario"]) :]
        raise TaskRowError(
            f"not a valid tau2 task: {error['msg']} (got {str(error.get('input'))[:80]!r})",
            field=field,
        ) from None
    except Exception as exc:  # tau2's own validators may raise other errors
        raise TaskRowError(
            f"not a valid tau2 task ({type(exc).__name__}: {_one_line(exc)})", field="reward_spec"
        ) from None


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
