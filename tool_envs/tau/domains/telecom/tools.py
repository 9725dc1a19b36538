"""The telecom tools: the agent's (account side) and the customer's own phone (dual control).

:class:`TelecomTools` is the agent: it looks up customers, lines, plans and bills, and changes
the account within the policy's rules. :class:`PhoneTools` is what the *customer* can do on
their phone (toggle settings, reseat the SIM, restart, pay a payment request); the agent never
sees these tools, so it has to ask. Both act on the same episode database, so the reward's hash
covers the account and the phone together.

Every tool reads through ``self.db`` (the episode's copy-on-write view) and changes records only
through ``db.edit``; lookups by phone number or by name and date of birth go through base
indexes, so no call scans a table. A bad request raises ``ValueError`` with a message for the
caller (an ``Error: ...`` tool message); a write that fails changes nothing (all checks run
before the first edit).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tool_envs.core.tools import tool
from tool_envs.tau.domains.telecom import phone
from tool_envs.tau.domains.telecom.data import (
    CURRENT_PERIOD,
    DEFAULT_APN,
    MAX_TOP_UP_GB,
    NETWORK_MODES,
    SUSPEND_REASONS,
    TODAY,
)
from tool_envs.tau.tools import DatabaseTools, DomainTools

Record = dict[str, Any]

_NON_DIGITS = re.compile(r"\D")


def canonical_phone(text: str) -> str:
    """A US phone number as the database writes it (``510-555-0134``); ValueError otherwise."""
    digits = _NON_DIGITS.sub("", text)
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    if len(digits) != 10:
        raise ValueError(f"'{text}' is not a 10-digit phone number (such as '510-555-0134')")
    return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"


def _phone_key(line: Record) -> str:
    return line["phone_number"]


def _name_dob_key(customer: Record) -> tuple[str, str]:
    return (" ".join(customer["full_name"].lower().split()), customer["date_of_birth"])


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _Records(DatabaseTools):
    """Record access shared by the agent's and the phone's tools."""

    def _customer(self, customer_id: str) -> Record:
        return self._record("customers", customer_id, "customer", example="C123456")

    def _line(self, line_id: str) -> Record:
        return self._record("lines", line_id, "line", example="L123456")

    def _plan(self, plan_id: str) -> Record:
        return self._record("plans", plan_id, "plan", hint=" (list_plans shows the plan ids)")

    def _bill(self, bill_id: str) -> Record:
        return self._record("bills", bill_id, "bill", example="B1234567")

    def _overdue_bills(self, customer: Record) -> list[Record]:
        bills = (self.db.get("bills", bill_id) for bill_id in customer["bill_ids"])
        return [bill for bill in bills if bill is not None and bill["status"] == "overdue"]


class TelecomTools(DomainTools, _Records):
    """Tools of a mobile carrier's customer-service agent (account side only)."""

    # ----------------------------------------------------------------------- identify

    @tool
    def find_customer_by_phone(self, phone_number: str) -> str:
        """Find the id of the customer who owns a phone number (one of their lines). Then
        verify the caller's full name or date of birth against get_customer_details.

        Args:
            phone_number: The phone number, such as '510-555-0134'.
        """
        found = self.db.lookup("lines", "phone", _phone_key, canonical_phone(phone_number))
        if not found:
            raise ValueError("no line with that phone number")
        return self.db.get("lines", found[0])["customer_id"]

    @tool
    def find_customer_by_name_dob(self, full_name: str, date_of_birth: str) -> str:
        """Find a customer's id from their full name and date of birth, for callers who cannot
        give a phone number of their account.

        Args:
            full_name: First and last name, such as 'Ilse Kovacs'.
            date_of_birth: Date of birth as YYYY-MM-DD, such as '1984-07-02'.
        """
        key = (" ".join(full_name.lower().split()), date_of_birth.strip())
        return self._find("customers", "name_dob", _name_dob_key, key, "customer not found")

    # ----------------------------------------------------------------------- reads

    @tool
    def get_customer_details(self, customer_id: str) -> str:
        """Get a customer's profile: name, date of birth, email, address, account status,
        payment methods, lines (line id and phone number) and bill ids.

        Args:
            customer_id: The customer id, such as 'C123456'.
        """
        return self._record_text("customers", customer_id, self._customer(customer_id))

    @tool
    def get_line_details(self, line_id: str) -> str:
        """Get a line: phone number, plan, status (and suspension reason), whether roaming is
        enabled on the account, data used, data allowance and data left this billing cycle.
        It does not show the phone's own settings: only the customer can see those.

        Args:
            line_id: The line id, such as 'L123456'.
        """
        line = self._line(line_id)
        return self._cached(
            ("lines", line_id), [("lines", line_id, line)], lambda: self._line_view(line)
        )

    @tool
    def list_plans(self) -> str:
        """List every plan: id, name, monthly price, data, top-up price per GB, roaming rates
        and whether it is available to switch to (legacy plans are not)."""
        # Tools never change plans, so the base table is the whole answer.
        return self._cached(("", "plans"), [], lambda: list(self.db.base.tables["plans"].values()))

    @tool
    def get_plan_details(self, plan_id: str) -> str:
        """Get one plan: monthly price, data, top-up price per GB, roaming rates, availability.

        Args:
            plan_id: The plan id, such as 'plus-20'.
        """
        return self._record_text("plans", plan_id, self._plan(plan_id))

    @tool
    def list_bills(self, customer_id: str) -> str:
        """List a customer's bills, oldest first: bill id, period (YYYY-MM), amount, due date,
        status (paid, overdue or pending) and payment request status.

        Args:
            customer_id: The customer id, such as 'C123456'.
        """
        customer = self._customer(customer_id)
        summary = []
        for bill_id in customer["bill_ids"]:
            bill = self.db.get("bills", bill_id)
            summary.append(
                {
                    "bill_id": bill_id,
                    "period": bill["period"],
                    "amount": bill["amount"],
                    "due_date": bill["due_date"],
                    "status": bill["status"],
                    "payment_request": bill["payment_request"],
                }
            )
        return _dumps(summary)

    @tool
    def get_bill_details(self, bill_id: str) -> str:
        """Get a bill with its items (plan charges per line, top-ups, roaming, taxes).

        Args:
            bill_id: The bill id, such as 'B1234567'.
        """
        return self._record_text("bills", bill_id, self._bill(bill_id))

    # ----------------------------------------------------------------------- line status

    @tool(writes=True)
    def suspend_line(self, line_id: str, reason: str) -> str:
        """Suspend an active line: it keeps its number and plan but has no service until it is
        resumed. Only call this after the customer has confirmed with an explicit yes.

        Args:
            line_id: The line id, such as 'L123456'.
            reason: Why: 'lost or stolen' or 'temporary hold'.
        """
        line = self._line(line_id)
        if line["status"] != "active":
            raise ValueError(f"line {line_id} is already suspended ({line['suspension_reason']})")
        if reason not in SUSPEND_REASONS:
            raise ValueError("the reason must be 'lost or stolen' or 'temporary hold'")
        line = self.db.edit("lines", line_id)
        line.update(status="suspended", suspension_reason=reason)
        return _dumps(self._line_view(line))

    @tool(writes=True)
    def resume_line(self, line_id: str) -> str:
        """Resume a suspended line. Not possible while the customer has an overdue bill: it
        must be paid first (send_payment_request). Only call this after the customer has
        confirmed with an explicit yes.

        Args:
            line_id: The line id, such as 'L123456'.
        """
        line = self._line(line_id)
        if line["status"] == "active":
            raise ValueError(f"line {line_id} is already active")
        self._require_no_overdue(line, "resumed")
        line = self.db.edit("lines", line_id)
        line.update(status="active", suspension_reason=None)
        return _dumps(self._line_view(line))

    # ----------------------------------------------------------------------- roaming

    @tool(writes=True)
    def enable_roaming(self, line_id: str) -> str:
        """Enable international roaming on an active line's account, so the line can use
        partner networks abroad at the plan's roaming rates (the customer must also turn on
        data roaming on the phone for mobile data abroad). Not possible while the customer has
        an overdue bill. Only call this after the customer has confirmed with an explicit yes.

        Args:
            line_id: The line id, such as 'L123456'.
        """
        line = self._require_active(line_id, "use roaming")
        if line["roaming_enabled"]:
            raise ValueError(f"roaming is already enabled on line {line_id}")
        self._require_no_overdue(line, "given roaming")
        line = self.db.edit("lines", line_id)
        line["roaming_enabled"] = True
        return _dumps(self._line_view(line))

    @tool(writes=True)
    def disable_roaming(self, line_id: str) -> str:
        """Disable international roaming on a line's account. Only call this after the customer
        has confirmed with an explicit yes.

        Args:
            line_id: The line id, such as 'L123456'.
        """
        line = self._line(line_id)
        if not line["roaming_enabled"]:
            raise ValueError(f"roaming is already disabled on line {line_id}")
        line = self.db.edit("lines", line_id)
        line["roaming_enabled"] = False
        return _dumps(self._line_view(line))

    # ----------------------------------------------------------------------- data and plans

    @tool(writes=True)
    def add_data_top_up(self, line_id: str, gb: int) -> str:
        """Add extra data to an active line for the rest of this billing cycle, at the plan's
        top-up price per GB; the charge is added to the customer's current bill. A line can get
        at most 10 GB of top-ups per billing cycle in total. Not possible while the customer
        has an overdue bill. Only call this after the customer has confirmed the amount of data
        and the price with an explicit yes.

        Args:
            line_id: The line id, such as 'L123456'.
            gb: Whole gigabytes to add, such as 2.
        """
        line = self._require_active(line_id, "get a top-up")
        if gb < 1:
            raise ValueError("gb must be a whole number of at least 1")
        room = MAX_TOP_UP_GB - line["data_top_up_gb"]
        if gb > room:
            raise ValueError(
                f"line {line_id} already has {line['data_top_up_gb']} GB of top-ups this cycle; "
                f"at most {MAX_TOP_UP_GB} GB per cycle, so at most {room} GB more"
            )
        customer = self._require_no_overdue(line, "given a top-up")
        bill = self._current_bill(customer)
        plan = self._plan(line["plan_id"])
        price = round(gb * plan["top_up_price_per_gb"], 2)

        line = self.db.edit("lines", line_id)
        line["data_top_up_gb"] += gb
        bill = self.db.edit("bills", bill["bill_id"])
        bill["items"].append(
            {"description": f"Data top-up {gb} GB, {line['phone_number']}", "amount": price}
        )
        bill["amount"] = round(bill["amount"] + price, 2)
        return _dumps({**self._line_view(line), "charged": price, "bill_id": bill["bill_id"]})

    @tool(writes=True)
    def change_plan(self, line_id: str, plan_id: str) -> str:
        """Move an active line to another available plan, from today; the new monthly price
        applies from the next bill. Not possible while the customer has an overdue bill. Only
        call this after the customer has confirmed the new plan and its price with an explicit
        yes.

        Args:
            line_id: The line id, such as 'L123456'.
            plan_id: The new plan's id, such as 'plus-20'.
        """
        line = self._require_active(line_id, "change plans")
        plan = self._plan(plan_id)
        if plan_id == line["plan_id"]:
            raise ValueError(f"line {line_id} is already on {plan['name']}")
        if not plan["available"]:
            raise ValueError(f"{plan['name']} is a legacy plan; it is no longer available")
        self._require_no_overdue(line, "moved to another plan")
        line = self.db.edit("lines", line_id)
        line["plan_id"] = plan_id
        return _dumps(self._line_view(line))

    # ----------------------------------------------------------------------- payments

    @tool(writes=True)
    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        """Send a payment request for an unpaid (overdue or pending) bill to the customer's
        phone; the customer approves it on the phone, which pays the bill with their default
        payment method. A customer can have only one open payment request at a time. Only call
        this after the customer has confirmed the bill and amount with an explicit yes.

        Args:
            customer_id: The customer id, such as 'C123456'.
            bill_id: The bill id, such as 'B1234567'.
        """
        customer = self._customer(customer_id)
        bill = self._bill(bill_id)
        if bill["customer_id"] != customer_id:
            raise ValueError(f"bill {bill_id} does not belong to customer {customer_id}")
        if bill["status"] == "paid":
            raise ValueError(f"bill {bill_id} is already paid")
        for other_id in customer["bill_ids"]:
            if self.db.get("bills", other_id)["payment_request"] == "sent":
                raise ValueError(
                    f"a payment request for bill {other_id} is still open; the customer must "
                    "approve it on their phone first"
                )
        bill = self.db.edit("bills", bill_id)
        bill["payment_request"] = "sent"
        return _dumps(
            {
                "bill_id": bill_id,
                "amount": bill["amount"],
                "status": bill["status"],
                "payment_request": "sent",
            }
        )

    # ----------------------------------------------------------------------- helpers

    def _line_view(self, line: Record) -> Record:
        plan = self._plan(line["plan_id"])
        limit = phone.data_limit_gb(line, plan)
        return {
            **line,
            "plan_name": plan["name"],
            "data_limit_gb": limit,
            "data_remaining_gb": round(max(limit - line["data_used_gb"], 0.0), 1),
        }

    def _require_active(self, line_id: str, what: str) -> Record:
        line = self._line(line_id)
        if line["status"] != "active":
            raise ValueError(
                f"line {line_id} is suspended ({line['suspension_reason']}); a suspended line "
                f"cannot {what}"
            )
        return line

    def _require_no_overdue(self, line: Record, done: str) -> Record:
        customer = self._customer(line["customer_id"])
        overdue = self._overdue_bills(customer)
        if overdue:
            bill = overdue[0]
            raise ValueError(
                f"customer {customer['customer_id']} has an overdue bill ({bill['bill_id']}, "
                f"{bill['period']}, {bill['amount']:.2f}); it must be paid before the line can "
                f"be {done}"
            )
        return customer

    def _current_bill(self, customer: Record) -> Record:
        bill = self.db.get("bills", customer["bill_ids"][-1])
        if bill["period"] != CURRENT_PERIOD or bill["status"] == "paid":
            raise ValueError(
                "the current bill is already paid; top-ups can be bought again next cycle"
            )
        return bill


class PhoneTools(_Records):
    """The customer's own phone (dual control): what they can check and change on it.

    Every tool takes the phone's own number, which the customer knows. Changes return what the
    phone shows afterwards, so the customer can tell the agent.
    """

    # ----------------------------------------------------------------------- look

    @tool
    def check_status_bar(self, phone_number: str) -> str:
        """Look at the status bar at the top of the screen: signal bars and network type (or
        'No service', 'No SIM card', airplane mode), mobile data and internet connection.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        return phone.status_bar(*self._state(phone_number))

    @tool
    def run_speed_test(self, phone_number: str) -> str:
        """Run a speed test on mobile data (Wi-Fi off) and see the download speed.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        return phone.speed_test(*self._state(phone_number))

    @tool
    def send_test_mms(self, phone_number: str) -> str:
        """Send a picture message (MMS) to yourself and see whether it goes through.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        return phone.send_mms(*self._state(phone_number))

    @tool
    def check_apn_settings(self, phone_number: str) -> str:
        """Open the mobile network settings and read the APN (access point name) and MMSC.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        device = self._device(phone_number)
        apn = device["apn"]
        return (
            f"APN settings: APN name '{apn['name']}', MMSC '{apn['mmsc']}'; preferred network "
            f"mode '{device['network_mode']}'; data roaming "
            f"{'on' if device['roaming_enabled_on_device'] else 'off'}."
        )

    @tool
    def check_payment_requests(self, phone_number: str) -> str:
        """Open the carrier app and see payment requests waiting for approval.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        customer = self._owner(phone_number)
        waiting = [
            f"bill {bill['bill_id']} ({bill['period']}): {bill['amount']:.2f}"
            for bill in (self.db.get("bills", b) for b in customer["bill_ids"])
            if bill["payment_request"] == "sent"
        ]
        if not waiting:
            return "Carrier app: no payment requests waiting."
        return "Carrier app: payment requests waiting for approval: " + "; ".join(waiting) + "."

    # ----------------------------------------------------------------------- settings

    @tool(writes=True)
    def toggle_airplane_mode(self, phone_number: str, enabled: bool) -> str:
        """Turn airplane mode on or off (it cuts all radios: calls, texts, mobile data).

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
            enabled: True to turn airplane mode on, False to turn it off.
        """
        return self._set(phone_number, "airplane_mode", enabled, "Airplane mode")

    @tool(writes=True)
    def toggle_mobile_data(self, phone_number: str, enabled: bool) -> str:
        """Turn mobile data on or off.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
            enabled: True to turn mobile data on, False to turn it off.
        """
        return self._set(phone_number, "mobile_data_enabled", enabled, "Mobile data")

    @tool(writes=True)
    def toggle_roaming(self, phone_number: str, enabled: bool) -> str:
        """Turn the phone's data roaming setting on or off (needed for mobile data abroad,
        together with roaming enabled on the account).

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
            enabled: True to turn data roaming on, False to turn it off.
        """
        return self._set(phone_number, "roaming_enabled_on_device", enabled, "Data roaming")

    @tool(writes=True)
    def set_apn(self, phone_number: str, apn_name: str) -> str:
        """Type a new APN (access point name) in the mobile network settings.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
            apn_name: The APN name, such as 'carrier.web'.
        """
        device = self._device(phone_number)
        name = apn_name.strip()
        if not name:
            raise ValueError("the APN name cannot be empty")
        if device["apn"]["name"] != name:
            self.db.edit("devices", device["phone_number"])["apn"]["name"] = name
        return f"APN name set to '{name}'. " + self.check_status_bar(phone_number)

    @tool(writes=True)
    def reset_apn_settings(self, phone_number: str) -> str:
        """Reset the APN settings (APN name and MMSC) to the carrier's defaults.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        device = self._device(phone_number)
        if device["apn"] != DEFAULT_APN:
            self.db.edit("devices", device["phone_number"])["apn"] = dict(DEFAULT_APN)
        return "APN settings reset to the defaults. " + self.check_status_bar(phone_number)

    @tool(writes=True)
    def set_network_mode(self, phone_number: str, mode: str) -> str:
        """Choose the preferred network mode.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
            mode: 'auto' (5G/4G/3G, the fastest available), '4g_only', '3g_only' or '2g_only'.
        """
        device = self._device(phone_number)
        if mode not in NETWORK_MODES:
            raise ValueError(f"mode must be one of {', '.join(NETWORK_MODES)}")
        if device["network_mode"] != mode:
            self.db.edit("devices", device["phone_number"])["network_mode"] = mode
        return f"Preferred network mode set to '{mode}'. " + self.check_status_bar(phone_number)

    # ----------------------------------------------------------------------- hardware

    @tool(writes=True)
    def reseat_sim(self, phone_number: str) -> str:
        """Take the SIM card out and put it back in firmly; the phone then needs a restart
        before it uses the SIM again.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        device = self.db.edit("devices", self._device(phone_number)["phone_number"])
        device.update(sim_status="seated", needs_reboot=True)
        return "SIM card taken out and put back in; the phone asks to be restarted. " + (
            self.check_status_bar(phone_number)
        )

    @tool(writes=True)
    def reboot_device(self, phone_number: str) -> str:
        """Restart the phone (turn it off and on again).

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
        """
        device = self._device(phone_number)
        if device["needs_reboot"]:
            self.db.edit("devices", device["phone_number"])["needs_reboot"] = False
        return "The phone restarted. " + self.check_status_bar(phone_number)

    # ----------------------------------------------------------------------- payments

    @tool(writes=True)
    def make_payment(self, phone_number: str, bill_id: str) -> str:
        """Approve a payment request in the carrier app: the bill is paid with the account's
        default payment method.

        Args:
            phone_number: This phone's own number, such as '510-555-0134'.
            bill_id: The bill of the payment request, such as 'B1234567'.
        """
        customer = self._owner(phone_number)
        bill = self._bill(bill_id)
        if bill["customer_id"] != customer["customer_id"] or bill["payment_request"] != "sent":
            raise ValueError(f"there is no payment request for bill {bill_id} in the carrier app")
        bill = self.db.edit("bills", bill_id)
        bill.update(status="paid", payment_request="completed", paid_on=TODAY)
        if customer["account_status"] == "past_due" and not self._overdue_bills(customer):
            self.db.edit("customers", customer["customer_id"])["account_status"] = "active"
        return f"Carrier app: bill {bill_id} paid ({bill['amount']:.2f}). Thank you!"

    # ----------------------------------------------------------------------- helpers

    def _device(self, phone_number: str) -> Record:
        device = self.db.get("devices", canonical_phone(phone_number))
        if device is None:
            raise ValueError(f"no phone with number {phone_number}")
        return device

    def _state(self, phone_number: str) -> tuple[Record, Record, Record]:
        device = self._device(phone_number)
        found = self.db.lookup("lines", "phone", _phone_key, device["phone_number"])
        line = self._line(found[0])
        return device, line, self._plan(line["plan_id"])

    def _owner(self, phone_number: str) -> Record:
        _, line, _ = self._state(phone_number)
        return self._customer(line["customer_id"])

    def _set(self, phone_number: str, field: str, enabled: bool, label: str) -> str:
        device = self._device(phone_number)
        word = "on" if enabled else "off"
        if device[field] == enabled:
            message = f"{label} is already {word}. "
        else:
            self.db.edit("devices", device["phone_number"])[field] = enabled
            message = f"{label} turned {word}. "
        return message + self.check_status_bar(phone_number)
