"""json (not jsonb) `->` and `->>` whose answer is an object or an array: refused.

PostgreSQL's json keeps its input text as written, so `'{"a": {"b": "x"}}'::json -> 'a'`
is `{"b": "x"}` with the input's spacing; DuckDB parses the text and writes the piece back
compact (`{"b":"x"}`). A scalar is the same text in both, so only an object or array
answer raises a refusal (0A000), when the row is computed. jsonb is printed PostgreSQL's
way by the gateway (gateway.executor.presented).
"""

from __future__ import annotations

from sqlglot import exp

CONTAINER_REFUSED = ("json -> or ->> of an object or array (PostgreSQL keeps its text as "
                     "written) is not supported by fedgate outside PostgreSQL sources")
_JSON = exp.DataType.Type.JSON


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.JSONExtract, exp.JSONExtractScalar) is not None


def _is_json(value: exp.Expression) -> bool:
    kind = value.to if isinstance(value, exp.Cast) else value.type
    return kind is not None and kind.this == _JSON


def postgres_json(node: exp.Expression) -> exp.Expression:
    """`node` with a refusal where its answer would be laid out otherwise."""
    if not isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)) or not _is_json(node.this):
        return node
    piece = exp.JSONExtract(this=node.this.copy(), expression=node.expression.copy(),
                            only_json_types=node.args.get("only_json_types"))
    kind = exp.Anonymous(this="json_type", expressions=[piece])
    container = exp.In(this=kind, expressions=[exp.Literal.string("OBJECT"), exp.Literal.string("ARRAY")])
    refusal = exp.Anonymous(this="error", expressions=[exp.Literal.string(CONTAINER_REFUSED)])
    return exp.Case(ifs=[exp.If(this=container, true=refusal)], default=node.copy())
