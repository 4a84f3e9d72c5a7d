"""Exact numbers from case files.

A case file writes its weights as integers, decimal text (``0.1`` is exactly 1/10, also
when TOML reads it as a float: the loader parses floats with ``decimal.Decimal``, never
through binary floats) or fractions as strings (``"1/3"``, ``"-2/7"``, ``"1e-5"``).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from fractions import Fraction

NUMBER_FORMS = 'a number: an integer, a decimal such as 0.125 or 1e-5, or a fraction such as "1/3"'


def parse_exact(value: object) -> Fraction:
    """Turn one case-file value into an exact :class:`fractions.Fraction`.

    Accepts ``int``, ``decimal.Decimal`` (what the TOML loader gives for floats) and
    strings holding an integer, a decimal or ``p/q``. Booleans, binary floats, ``nan``
    and infinities are refused.

    Raises:
        ValueError: when the value is not an exact finite number.
    """
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a boolean")  # (as TOML writes it: true, false)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not finite")
        return Fraction(value)
    if isinstance(value, str):
        text = value.strip().replace("\u2212", "-")
        if "/" in text:
            num, den = text.split("/", 1)
            try:
                num, den = int(num), int(den)
            except ValueError:
                raise ValueError(f"{value!r} is not a number") from None
            if den == 0:
                raise ValueError(f"{value!r} divides by 0")
            return Fraction(num, den)
        try:
            dec = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a number") from None
        if not dec.is_finite():
            raise ValueError(f"{value!r} is not finite")
        return Fraction(dec)
    raise ValueError(f"{value!r} is not a number")


@contextmanager
def python_int_guard():
    """Python's default limit of 4,300 digits on reading an integer from text, while a file
    from outside (a case, a checkpoint's config) is parsed: derive lifts the limit to print
    long values (derive/__init__.py), but a 16 MB integer would take minutes to read."""
    before = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else None
    if before is not None:
        sys.set_int_max_str_digits(4300)
    try:
        yield
    finally:
        if before is not None:
            sys.set_int_max_str_digits(before)
