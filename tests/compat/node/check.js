// node-postgres and pg-cursor against a running fedgate; prints one "ok <name>" per check
// and exits non-zero on the first failure. Usage: node check.js <host> <port> <database>
"use strict";
const { Client } = require("pg");
const Cursor = require("pg-cursor");
const assert = require("assert");

async function main() {
  const [host, port, database] = process.argv.slice(2);
  const client = new Client({ host, port: Number(port), database, user: "fedgate" });
  await client.connect();
  try {
    const simple = await client.query("select count(*)::int as n from nation");
    assert.strictEqual(simple.rows[0].n, 25);
    console.log("ok simple");

    const params = await client.query(
      "select n_name from nation where n_nationkey = $1 and n_regionkey = $2", [7, 3]);
    assert.deepStrictEqual(params.rows, [{ n_name: "GERMANY" }]);
    console.log("ok parameterized");

    for (let i = 0; i < 3; i++) {
      const named = await client.query({
        name: "region-by-key", text: "select r_name from region where r_regionkey = $1",
        values: [i] });
      assert.strictEqual(named.rows.length, 1);
    }
    console.log("ok named");

    const cursor = client.query(new Cursor(
      "select o_orderkey from orders order by o_orderkey limit 100"));
    const seen = [];
    for (let i = 0; i < 3; i++) {
      const rows = await cursor.read(5);
      assert.strictEqual(rows.length, 5);
      seen.push(...rows.map((r) => Number(r.o_orderkey)));
    }
    await cursor.close();
    assert.deepStrictEqual(seen, [...seen].sort((a, b) => a - b));
    assert.strictEqual(new Set(seen).size, 15);
    console.log("ok cursor");

    await assert.rejects(client.query("select * from no_such_table"),
                         (err) => err.code === "42P01");
    const after = await client.query("select 1 as one");
    assert.strictEqual(after.rows[0].one, 1);
    console.log("ok error-then-query");

    const catalog = await client.query(
      "select c.relname from pg_catalog.pg_class c join pg_catalog.pg_namespace n " +
      "on n.oid = c.relnamespace where n.nspname = $1 order by 1", ["demo"]);
    assert.ok(catalog.rows.some((r) => r.relname === "lineitem"));
    console.log("ok catalog");
  } finally {
    await client.end();
  }
}

main().catch((err) => { console.error("FAILED", err); process.exit(1); });
