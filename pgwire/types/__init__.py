"""PostgreSQL's types: the type table, and value codecs one module per type family.

- `pg_type`: the one table (pg_type rows, the served `PgType`s, names and typmods);
  `from_arrow`: which `PgType` an Arrow field is presented as; `table`: their public face.
- Families, each with text/binary output of result columns (column at a time over Arrow
  arrays) and text/binary input of Bind parameters, and a `register(registry)`:
  `bool`, `integers`, `floats`, `numeric` (+ `numeric_binary`), `text`, `uuid`,
  `datetime` (+ `datetime_text` for text input), `interval`, `arrays`.
- `registry`: how a codec is found (text output by Arrow type, the rest by OID);
  `adapters.REGISTRY`: the registry with every family registered.
- `rows`: RowDescription and DataRow messages from Arrow batches; `params`: Bind
  parameters. `columns`, `civil` and `zones` are the building blocks the families share.
"""
