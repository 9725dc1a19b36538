"""Record pieces several domains share (names, addresses, cards), typed once.

A domain's ``records.py`` types its own tables and imports these; see
:mod:`tool_envs.tau.domains.retail.records` for a whole data model.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

CardBrand = Literal["amex", "discover", "mastercard", "visa"]


class Name(TypedDict):
    first_name: str
    last_name: str


class PostalAddress(TypedDict):
    """A US address as tau-bench writes it (``address2`` is '' when unused)."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class StreetAddress(TypedDict):
    street: str
    city: str
    state: str
    zip: str


class CreditCard(TypedDict):
    """A saved card in tau-bench's payment-method shape (tagged by ``source``)."""

    source: Literal["credit_card"]
    id: str
    brand: CardBrand
    last_four: str
