"""The four calculator tools. Plain functions: the schemas come from their hints and docstrings."""

from __future__ import annotations


def _tidy(value: float) -> float | int:
    """Show 82.0 as 82 so results read like what a person would write."""
    return int(value) if float(value).is_integer() else round(value, 10)


def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return _tidy(a + b)


def subtract(a: float, b: float) -> float:
    """Subtract the second number from the first.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return _tidy(a - b)


def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return _tidy(a * b)


def divide(a: float, b: float) -> float:
    """Divide the first number by the second.

    Args:
        a: The dividend.
        b: The divisor (must not be zero).
    """
    if b == 0:
        raise ValueError("cannot divide by zero")
    return _tidy(a / b)


CALCULATOR_TOOLS = (add, subtract, multiply, divide)
