"""jsonb's text as PostgreSQL's jsonb_out writes it.

PostgreSQL keeps a jsonb as a value: an object's keys ordered by length, then bytewise,
the last of repeated keys, numbers as numerics (`1e2` is 100, `1.0e-3` 0.0010), and prints
it with a space after each comma and colon. The engine keeps the text it was given, so
what it answers as jsonb is laid out again here (gateway.executor.presented), and a
constant jsonb is read here when the DuckDB dialect folds a path over it
(connectors.dialects.duckdb.json_paths).
"""

from __future__ import annotations

import json
from decimal import Decimal


class _Number(str):
    """A JSON number token, kept as the engine wrote it."""


def _numeric_text(token: str) -> str:
    """A JSON number as jsonb keeps it, a numeric: `1e2` is 100, `1.0e-3` 0.0010, `-0` 0."""
    number = Decimal(token)
    text = f"{number:f}"
    return text.lstrip("-") if number == 0 else text


def _jsonb_value(value: object) -> str:
    if isinstance(value, _Number):
        return _numeric_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_jsonb_value(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_jsonb_value(value[k])}"
                               for k in keys) + "}"
    return "null" if value is None else "true" if value is True else "false"


def jsonb_text(text: str) -> str:
    """A JSON text laid out as PostgreSQL's jsonb_out prints it."""
    return _jsonb_value(jsonb_value(text))


def jsonb_value(text: str) -> object:
    """A JSON text parsed as jsonb reads it: numbers kept as their tokens (`jsonb_text`)."""
    return json.loads(text, parse_int=_Number, parse_float=_Number, object_pairs_hook=dict,
                      parse_constant=_not_json)


def _not_json(word: str) -> object:
    raise ValueError(f"{word} is not JSON")  # Python reads NaN and Infinity, PostgreSQL does not


def scalar_text(value: object) -> str | None:
    """`->>`'s text of a jsonb piece: a string's own, a number's numeric text, a
    container's jsonb layout, NULL for a JSON null."""
    if value is None:
        return None
    if isinstance(value, str) and not isinstance(value, _Number):
        return value
    return _jsonb_value(value)


def jsonb_layout(value: object) -> str:
    """A parsed jsonb value (`jsonb_value`) laid out as jsonb_out prints it."""
    return _jsonb_value(value)


def path_piece(document: object, path: list[str]) -> tuple[bool, object]:
    """(found, piece) of jsonb_extract_path: each element a key of an object, or the index
    of an array element when it reads as an integer (negative from the end); nothing in a
    scalar (`'5'::jsonb #> '{0}'` is NULL, though `->` 0 finds it)."""
    current = document
    for element in path:
        if isinstance(current, dict):
            if element not in current:
                return False, None
            current = current[element]
            continue
        items = current if isinstance(current, list) else None
        try:
            index = int(element.strip())
        except ValueError:
            return False, None
        if items is None or not -len(items) <= index < len(items):
            return False, None
        current = items[index]
    return True, current
