"""What a link's source session holds of its clients' settings, and the commands that
bring it to the next statement's client.

Two kinds of the client's settings reach a PostgreSQL source: the formatting ones
(`MIRRORED`: the source formats the values the client receives), which every session has
a value of, and the others the client set that the source would act on (`forwarded`:
work_mem, enable_*, lock_timeout, a custom `app.tenant` a row-level security policy
reads ...), which the session passes as sorted (name, value) pairs. A link serves one
client at a time but many over its life (transaction pooling), so before each relayed
statement the link is brought to that client's values with SET and RESET of the
differences; RESET gives a setting the client never set the source's default, never
another client's value.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

# Client settings that change how PostgreSQL formats values: the link mirrors them.
MIRRORED = ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output")
_UNKNOWN = "\0unknown"  # a setting's value on the source when it cannot be known
Forwarded = tuple[tuple[str, str], ...]


def mirror_key(settings: Mapping[str, str], forwarded: Forwarded) -> tuple:
    """What a link compares to know its source has a client's settings: equal keys, no
    command to send (the express lane's arming compares the same)."""
    return (*map(settings.get, MIRRORED), forwarded)


def setting_name_sql(name: str) -> str:
    """A setting's name as SET writes it: each dotted part a quoted identifier (sqlglot),
    so a custom name is never text spliced into the command."""
    return ".".join(exp.to_identifier(part, quoted=True).sql("postgres") for part in name.split("."))


def setting_value_sql(value: str) -> str:
    return exp.Literal.string(value).sql("postgres")


class SourceSettings:
    """The settings a link's source session has from the gateway."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        self.values: dict[str, str] = {k: settings[k] for k in MIRRORED if k in settings}
        self.key: tuple | None = None  # the mirror_key the values match, None: unknown
        self.unsure: set[str] = set()  # set inside a source transaction (see commands)

    def commands(self, settings: Mapping[str, str], forwarded: Forwarded,
                 in_transaction: bool) -> list[str]:
        """SET and RESET commands that bring the source to the client's `settings` and
        `forwarded`. `in_transaction`: they run inside a source transaction (the block's),
        whose rollback would undo them, so they are sent again after it."""
        # Asked before every relayed statement: the client's values as of the last call
        # (which `self.values` then matched) answer a repeat with one comparison.
        if self.unsure and not in_transaction:
            # The transaction they were set in ended, committed or rolled back (which
            # undid them): what the source holds is not known, so they are sent again.
            for name in self.unsure:
                self.values[name] = _UNKNOWN
            self.unsure = set()
        current = mirror_key(settings, forwarded)
        if current == self.key:
            return []
        self.key = current
        wanted = {name: settings.get(name) for name in MIRRORED}
        wanted.update(forwarded)
        for name in self.values:
            wanted.setdefault(name, None)  # a forwarded one the client no longer sets
        commands, changed = [], []
        for name, value in wanted.items():
            if value is None:
                if self.values.pop(name, None) is not None:
                    commands.append(f"RESET {setting_name_sql(name)}")
                    changed.append(name)
            elif self.values.get(name) != value:
                commands.append(f"SET {setting_name_sql(name)} = {setting_value_sql(value)}")
                self.values[name] = value
                changed.append(name)
        if changed and in_transaction:
            self.unsure.update(changed)
            self.key = None  # asked again, the repeats included, until the end is seen
        return commands
