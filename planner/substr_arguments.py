"""substr()'s unknown literals as its integers: `substr(s, '2')` is `substr(s, 2)`.

PostgreSQL's substr has no pattern form, so an unknown literal in it resolves to the
integer it takes (and 'x' is 22P02). sqlglot parses substr() and substring() into one
class, and the engine's dialect reads a text start as substring's pattern form
(`substring(s, 'p')`, `substring(s FROM 'p')`), so `substr(name, '1')` answered NULL.
Only a call by the name substr records where its name is: substring's own grammar (FROM
and FOR, or commas) does not.

    before: Substring(this=name, start='1')      written substr(name, '1')
    after:  Substring(this=name, start=CAST('1' AS INT))
"""

from __future__ import annotations

from sqlglot import exp


def substr_arguments(call: exp.Substring) -> exp.Substring:
    if call.meta.get("start") is None:
        return call  # substring(...): its text argument is a pattern
    for arg in ("start", "length"):
        value = call.args.get(arg)
        if isinstance(value, exp.Literal) and value.is_string:
            value.replace(exp.cast(value.copy(), exp.DataType.build("int")))
    return call
