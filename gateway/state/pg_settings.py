"""PostgreSQL's own settings, checked as its SET checks them (guc.c), from pg_settings.

`pg_settings.tsv` beside this module lists every setting of PostgreSQL 15 with its type,
context, unit, range and allowed values (written from a real server by
tests/support/pg_setting_specs.py). A name PostgreSQL does not have is refused with 42704,
unless it is a custom one with a dot (`app.tenant`), which PostgreSQL keeps as a
placeholder; one only the server's start, its configuration file or a superuser may set is
refused as PostgreSQL refuses it for a user who is not one; a value is checked against the
setting's type and range and stored as SHOW shows it (`65536` kB is `64MB`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from pgwire.errors import (CANT_CHANGE_RUNTIME_PARAM, INSUFFICIENT_PRIVILEGE,
                           INVALID_PARAMETER_VALUE, UNDEFINED_OBJECT, PgError)

INVALID_NAME = "42602"

SPECS_FILE = Path(__file__).with_name("pg_settings.tsv")

_MEMORY_UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_BASE_UNITS = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "ms": 1, "s": 1000, "min": 60_000}
_HINTS = {"memory": 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".',
          "time": 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'}
_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")
# a part of a custom name (guc.c's valid_custom_variable_name): a letter, _ or a byte
# past ASCII first, then those, digits and $
_SIMPLE_NAME = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9$\x80-\U0010ffff]*")
_BOOLEAN_WORDS = {"true": "on", "false": "off", "yes": "on", "no": "off", "on": "on", "off": "off"}


@dataclass(frozen=True)
class SettingSpec:
    name: str
    vartype: str  # bool, integer, real, enum, string
    context: str  # internal, postmaster, sighup, superuser-backend, backend, superuser, user
    unit: str  # the base unit of an integer or real ("kB", "8kB", "ms", "s", ...), or ""
    low: float | None
    high: float | None
    choices: tuple[str, ...]  # an enum's values
    default: str  # the built-in default, in base units (boot_val)

    @property
    def unit_kind(self) -> str | None:
        if self.unit in ("B", "kB", "8kB", "MB"):
            return "memory"
        if self.unit in ("ms", "s", "min"):
            return "time"
        return None


def _load() -> dict[str, SettingSpec]:
    specs = {}
    for line in SPECS_FILE.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, vartype, context, unit, low, high, choices, default = line.split("\t")
        specs[name.lower()] = SettingSpec(name, vartype, context, unit,
                                          float(low) if low else None, float(high) if high else None,
                                          tuple(choices.split(",")) if choices else (), default)
    return specs


SPECS = _load()
NAMES = tuple(spec.name for spec in SPECS.values())  # as PostgreSQL spells them


def spec_of(name: str) -> SettingSpec | None:
    return SPECS.get(name.lower())


def check_known(name: str, at_startup: bool = False) -> SettingSpec | None:
    """`name`'s spec, after PostgreSQL's refusals for a user who is not a superuser: 42704
    for a name it does not have (None for a custom `a.b` one), 55P02 for one only the
    server's start or its configuration sets (or, after the startup packet, one set only
    at a connection's start), 42501 for a superuser's."""
    spec = spec_of(name)
    if spec is None:
        if "." not in name:
            raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
        if not all(_SIMPLE_NAME.fullmatch(part) for part in name.split(".")):
            raise PgError(INVALID_NAME, f'invalid configuration parameter name "{name}"',
                          detail="Custom parameter names must be two or more simple identifiers "
                                 "separated by dots.")
        return None
    refusal = {
        "internal": f'parameter "{spec.name}" cannot be changed',
        "postmaster": f'parameter "{spec.name}" cannot be changed without restarting the server',
        "sighup": f'parameter "{spec.name}" cannot be changed now',
    }.get(spec.context)
    if refusal is None and spec.context == "backend" and not at_startup:
        refusal = f'parameter "{spec.name}" cannot be set after connection start'
    if refusal is not None:
        raise PgError(CANT_CHANGE_RUNTIME_PARAM, refusal)
    if spec.context in ("superuser", "superuser-backend"):
        raise PgError(INSUFFICIENT_PRIVILEGE, f'permission denied to set parameter "{spec.name}"')
    return spec


def shown_default(name: str) -> str | None:
    """SHOW's answer for a setting of PostgreSQL's the session has not set: its built-in
    default as PostgreSQL shows it (`4MB` for work_mem); None for a name it does not have."""
    spec = spec_of(name)
    if spec is None:
        return None
    return checked_value(spec, spec.default) if spec.vartype in ("integer", "real") else spec.default


def checked_value(spec: SettingSpec, value: str) -> str:
    """`value` for `spec` as PostgreSQL stores and SHOW shows it, or its 22023."""
    if spec.vartype == "bool":
        return _boolean(spec, value)
    if spec.vartype == "enum":
        lowered = value.strip().lower()
        for choice in spec.choices:
            if choice.lower() == lowered:
                return choice
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{spec.name}": "{value}"',
                      hint=f"Available values: {', '.join(spec.choices)}.")
    if spec.vartype in ("integer", "real"):
        return _number(spec, value)
    return value


def _boolean(spec: SettingSpec, value: str) -> str:
    return parse_bool(spec.name, value)


def parse_bool(name: str, value: str) -> str:
    """`on` or `off` as PostgreSQL's parse_bool reads `value` (a unique prefix of
    true/false/yes/no, on/off, 1/0), or the 22023 SET gives for setting `name`."""
    word = value.strip().lower()
    if word in ("1", "0"):
        return "on" if word == "1" else "off"
    found = {meaning for full, meaning in _BOOLEAN_WORDS.items()
             if word and full.startswith(word) and (len(word) >= 2 or full[0] not in "o")}
    if len(found) != 1:
        raise PgError(INVALID_PARAMETER_VALUE, f'parameter "{name}" requires a Boolean value')
    return found.pop()


def _number(spec: SettingSpec, value: str) -> str:
    kind = spec.unit_kind
    invalid = PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{spec.name}": "{value}"',
                      hint=_HINTS.get(kind or ""))
    matched = _NUMBER.match(value)
    if matched is None:  # not a number: no hint (parse_int's hint is about units)
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{spec.name}": "{value}"')
    number, unit = float(matched.group(1)), matched.group(2)
    if unit:
        units = _MEMORY_UNITS if kind == "memory" else TIME_UNITS if kind == "time" else {}
        if unit not in units:
            raise invalid
        number = number * units[unit] / _BASE_UNITS[spec.unit]
    if spec.vartype == "integer":
        whole = math.floor(number + 0.5) if number >= 0 else -math.floor(-number + 0.5)  # rint
        if spec.low is not None and spec.high is not None and not spec.low <= whole <= spec.high:
            shown_unit = f" {spec.unit}" if spec.unit else ""
            raise PgError(INVALID_PARAMETER_VALUE,
                          f'{whole}{shown_unit} is outside the valid range for parameter '
                          f'"{spec.name}" ({int(spec.low)} .. {int(spec.high)})')
        return _shown_integer(spec, whole)
    if spec.low is not None and spec.high is not None and not spec.low <= number <= spec.high:
        shown_unit = f" {spec.unit}" if spec.unit else ""
        raise PgError(INVALID_PARAMETER_VALUE,
                      f'{number:g}{shown_unit} is outside the valid range for parameter '
                      f'"{spec.name}" ({spec.low:g} .. {spec.high:g})')
    return f"{number:g}{spec.unit}"


def _shown_integer(spec: SettingSpec, whole: int) -> str:
    """guc.c's convert_int_from_base_unit: in the largest unit that divides the value
    evenly (a positive one; 0 and -1 are shown bare)."""
    kind = spec.unit_kind
    if kind is None or whole <= 0:
        return str(whole)
    units = _MEMORY_UNITS if kind == "memory" else TIME_UNITS
    base = whole * _BASE_UNITS[spec.unit]
    floor = _BASE_UNITS[spec.unit] if kind == "time" else min(_BASE_UNITS[spec.unit], 1024)
    for unit, size in sorted(units.items(), key=lambda item: -item[1]):
        if size >= floor and base % size == 0:
            return f"{base // size}{unit}"
    return f"{whole}{spec.unit}"
