"""A tiny bank domain for engine tests, and an OpenAI-compatible server that plays a customer.

The server speaks the real ``POST /v1/chat/completions`` wire protocol, so the real ``openai``
client talks to it. As the customer it answers from the instruction in its system prompt: the
email when asked for it, "yes" to a confirmation, ``###STOP###`` otherwise. It can also play the
checker of the ``verify`` strategy (answering No a set number of times) and writes react-format
replies when the system prompt asks for them. For failure tests it can answer 503 first, answer
late (``delay``), call a device tool on every round (``device_loop``) or send a fixed (empty)
text.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from http_helpers import (
    RecordingHandler,
    RecordingServer,
    chat_completion,
    send_json,
    serving,
)

from tool_envs.core.tools import tool
from tool_envs.tau.domain import DatabaseTools, Domain, DomainTools
from tool_envs.tau.env import TauEnv
from tool_envs.tau.task import tau_task_row

ENV_ID = "tool_envs/TauBankTest-v0"
POLICY = "You are a bank agent. Authenticate the user by email, confirm before any withdrawal."
PROMPT_TOKENS, COMPLETION_TOKENS = 11, 7


def bank_tables() -> dict[str, dict[str, dict[str, Any]]]:
    return {
        "accounts": {
            f"a{i}": {"owner": f"user{i}@bank.test", "balance": 100 + i} for i in range(1000)
        },
        "cards": {f"c{i}": {"account": f"a{i}", "locked": True} for i in range(1000)},
    }


class BankTools(DomainTools):
    @tool
    def find_account(self, email: str) -> str:
        """Find the id of the account that belongs to an email address.

        Args:
            email: The account owner's email.
        """
        found = self.db.lookup("accounts", "owner", lambda r: r["owner"], email)
        if not found:
            raise ValueError("no account with that email")
        return found[0]

    @tool
    def get_balance(self, account_id: str) -> int:
        """The balance of an account.

        Args:
            account_id: The account id.
        """
        account = self.db.get("accounts", account_id)
        if account is None:
            raise ValueError("account not found")
        return account["balance"]

    @tool(writes=True)
    def withdraw(self, account_id: str, amount: int) -> dict:
        """Withdraw money from an account.

        Args:
            account_id: The account id.
            amount: Dollars to withdraw.
        """
        if self.db.get("accounts", account_id) is None:
            raise ValueError("account not found")
        account = self.db.edit("accounts", account_id)
        account["balance"] -= amount
        return {"balance": account["balance"]}


class BankAppTools(DatabaseTools):
    """What the customer can do in their banking app (the dual-control side)."""

    @tool(writes=True)
    def unlock_card_in_app(self, card_id: str) -> str:
        """Unlock a payment card in the banking app.

        Args:
            card_id: The card, such as 'c12'.
        """
        if self.db.get("cards", card_id) is None:
            raise ValueError("no such card in the app")
        self.db.edit("cards", card_id)["locked"] = False
        return f"card {card_id}: unlocked"


def bank_task(
    env_id: str,
    domain: str,
    key: str,
    index: int,
    scenario: dict[str, Any],
    actions: list[dict[str, Any]],
    outputs: Sequence[str] = (),
) -> dict[str, Any]:
    """A row of the test bank about account ``index``, with id ``<domain>-<key>``: its user knows
    the account's email, and the gold finds the account by it before ``actions``."""
    email = f"user{index}@bank.test"
    return tau_task_row(
        env_id=env_id,
        domain=domain,
        task_id=f"{domain}-{key}",
        policy=POLICY,
        scenario={**scenario, "known_info": {"email": email}},
        actions=[{"name": "find_account", "arguments": {"email": email}}, *actions],
        outputs=outputs,
    )


def bank_row(index: int, amount: int = 10, *, write: bool = True) -> dict[str, Any]:
    if write:
        action = {"name": "withdraw", "arguments": {"account_id": f"a{index}", "amount": amount}}
        reason = f"I want to withdraw {amount} dollars."
        outputs = [str(100 + index - amount)]
    else:
        action = {"name": "get_balance", "arguments": {"account_id": f"a{index}"}}
        reason, outputs = "What is my balance?", []
    scenario = {
        "persona": "A busy customer.",
        "reason_for_call": reason,
        "task_instructions": "Accept the withdrawal if asked to confirm.",
    }
    return bank_task(ENV_ID, "bank", f"{index}-{write}", index, scenario, [action], outputs)


BANK = Domain(
    name="bank",
    env_id=ENV_ID,
    policy=POLICY,
    tools=BankTools,
    load_tables=bank_tables,
    load_splits=lambda: {"train": [bank_row(i) for i in range(5)], "test": [bank_row(7)]},
)


class BankEnv(TauEnv):
    domain = BANK


DUAL_ENV_ID = "tool_envs/TauBankDualTest-v0"


def dual_row(index: int) -> dict[str, Any]:
    """The card of account ``index`` is locked; only the customer can unlock it, in the app."""
    unlock = {"name": "unlock_card_in_app", "arguments": {"card_id": f"c{index}"}}
    scenario = {
        "reason_for_call": "My card is declined everywhere.",
        "user_actions": [
            {**unlock, "instruction": "unlock your card in the app", "triggers": ["unlock"]}
        ],
    }
    actions = [{**unlock, "requestor": "user"}]
    return bank_task(DUAL_ENV_ID, "bank-dual", str(index), index, scenario, actions)


BANK_DUAL = dataclasses.replace(
    BANK,
    name="bank-dual",
    env_id=DUAL_ENV_ID,
    user_tools=BankAppTools,
    load_splits=lambda: {"train": [dual_row(i) for i in range(3)]},
)


class BankDualEnv(TauEnv):
    domain = BANK_DUAL


# -- a customer behind the OpenAI wire protocol ----------------------------------------------------


class CustomerServer(RecordingServer):
    def __init__(self, reject_verifications: int = 0, fail_first: int = 0, port: int = 0):
        super().__init__(_Handler, port)
        self.reject_verifications = reject_verifications
        self.fail_first = fail_first  # answer this many requests with HTTP 503 first
        # device tool -> words in the agent's message that make the customer call it
        self.device_rules: dict[str, str] = {"unlock_card_in_app": "unlock"}
        self.device_loop = False  # call a device tool whenever tool_choice allows it
        self.text: str | None = None  # answer with this text instead (e.g. "" for an empty one)
        self.delay = 0.0  # seconds to wait before answering (a slow server)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up on a slow answer is part of the tests, not an error

    def take_failure(self) -> bool:
        """Whether this request is one of the first ``fail_first`` (answered with HTTP 503)."""
        failing = self.fail_first > 0
        self.fail_first -= failing
        return failing


class _Handler(RecordingHandler):
    server: CustomerServer

    def do_POST(self) -> None:
        body, failing = self.read_recorded(self.server.take_failure)
        time.sleep(self.server.delay)
        if failing:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        message = self._answer(body)
        tokens = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS}
        send_json(self, 200, chat_completion(body["model"], message, **tokens))

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message: text, or a device tool call when the agent asks to unlock."""
        messages = body["messages"]
        tools = {t["function"]["name"] for t in body.get("tools", [])}
        last = messages[-1]
        if self.server.device_loop and tools and body.get("tool_choice") != "none":
            call = {"name": sorted(tools)[0], "arguments": json.dumps({"card_id": "c0"})}
            part = {"id": f"call_{len(messages)}", "type": "function", "function": call}
            return {"role": "assistant", "content": None, "tool_calls": [part]}
        if self.server.text is not None:
            return {"role": "assistant", "content": self.server.text}
        if last["role"] == "tool":
            return {"role": "assistant", "content": f"Done, the app says: {last['content']}"}
        for name, words in self.server.device_rules.items():
            if name in tools and words in last["content"].lower():
                card = re.search(r"card (c\d+)", last["content"])
                arguments = {"card_id": card.group(1) if card else "c0"} if "card" in name else {}
                call = {"name": name, "arguments": json.dumps(arguments)}
                return {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_device_0", "type": "function", "function": call}],
                }
        return {"role": "assistant", "content": self._text(messages)}

    def _text(self, messages: list[dict[str, Any]]) -> str:
        last = messages[-1]["content"]
        if "Answer with one word: Yes or No." in last:
            with self.server.lock:
                if self.server.reject_verifications > 0:
                    self.server.reject_verifications -= 1
                    return "No"
            return "Yes"
        if "Reflect briefly" in last:
            return "Reflection:\nI said too much.\nUser Response:\nSorry, let me rephrase: yes."
        system = messages[0]["content"]
        email = re.search(r"email: (\S+?)[.;]?(?:\s|$)", system)
        if "email" in last.lower() and email:
            reply = f"Sure, it is {email.group(1)}"
        elif "confirm" in last.lower() or "proceed" in last.lower():
            reply = "Yes, please."
        else:
            reply = "###STOP###"
        if "User Response:" in system:
            return f"Thought:\nThe agent needs an answer.\nUser Response:\n{reply}"
        return reply


@contextmanager
def customer_server(
    reject_verifications: int = 0, fail_first: int = 0, port: int = 0
) -> Iterator[CustomerServer]:
    """The customer on ``port`` (default: a free one; a given one "restarts" a dead server)."""
    server = CustomerServer(reject_verifications, fail_first, port)
    with serving(server, daemon=True):
        yield server
