"""What a transaction block does to the session's settings, as PostgreSQL has it.

A SET inside a block lasts past COMMIT and is undone by ROLLBACK (or the COMMIT of a failed
block); a SET LOCAL lasts until the block ends either way, and a plain SET of the same name
after it in the block gives the value COMMIT keeps. ROLLBACK TO SAVEPOINT undoes the
changes since that savepoint, SET LOCAL ones included; RELEASE keeps them (guc.c's nest
levels). `BlockSettings` remembers what to restore from the block's first change and at
each savepoint taken after one; a block that changes nothing costs nothing.
"""

from __future__ import annotations


class BlockSettings:
    def __init__(self) -> None:
        self._before: dict[str, str] | None = None  # all values at the block's first change
        self._locals: dict[str, str | None] = {}  # SET LOCAL's names: the value COMMIT keeps
        # per savepoint, oldest first: the values and _locals when it was taken (None for
        # the values: the block's first values, as nothing had changed yet)
        self._marks: list[tuple[dict[str, str] | None, dict[str, str | None]]] = []

    @property
    def changed(self) -> bool:
        """The block has changed a setting: its end restores some."""
        return self._before is not None

    def before_change(self, values: dict[str, str], name: str, local: bool) -> None:
        """`name` is about to change inside the block (`local`: by SET LOCAL)."""
        if self._before is None:
            self._before = dict(values)
        if local:
            self._locals.setdefault(name, values.get(name))

    def after_session_change(self, values: dict[str, str], name: str) -> None:
        """A plain SET or RESET of `name` in the block: after a SET LOCAL of it, its new
        value is the one COMMIT keeps."""
        if name in self._locals:
            self._locals[name] = values.get(name)

    def savepoint(self, values: dict[str, str]) -> None:
        """A SAVEPOINT was taken, the block's newest."""
        self._marks.append((None if self._before is None else dict(values), dict(self._locals)))

    def release(self, depth: int) -> None:
        """RELEASE of the savepoint `depth` deep (0: the oldest) and those after it: their
        changes stay."""
        del self._marks[depth:]

    def rollback_to(self, values: dict[str, str], depth: int) -> None:
        """ROLLBACK TO the savepoint `depth` deep, which stays: `values` as they were when
        it was taken, in place."""
        del self._marks[depth + 1:]
        then, locals_then = self._marks[depth]
        if then is None:
            then = self._before
        if then is None:  # nothing changed in the block at all
            return
        values.clear()
        values.update(then)
        self._locals = dict(locals_then)

    def end(self, values: dict[str, str], committed: bool) -> None:
        """The block ended (`committed`: by a COMMIT that committed): `values` as
        PostgreSQL leaves them, in place (other code holds the dictionary)."""
        self._marks = []
        if self._before is None:
            return
        if committed:
            for name, kept in self._locals.items():
                if kept is None:
                    values.pop(name, None)
                else:
                    values[name] = kept
        else:
            values.clear()
            values.update(self._before)
        self._before, self._locals = None, {}
