// pgJDBC (Debian's libpostgresql-jdbc-java) against fedgate, run by
// tests/compat/test_catalog_jdbc.py. Prints "ok <check>" per check; any failure throws.
// Usage: java -cp postgresql.jar:. CatalogCheck <demo-url> <keyed-url> <slow-query>
// (<slow-query> runs on the demo until cancelled: tests/support/slow.py.)
import java.sql.*;
import java.util.*;

public class CatalogCheck {
    static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError(what);
    }

    static List<String> column(ResultSet rs, String name) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) out.add(rs.getString(name));
        rs.close();
        return out;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", "fedgate");
        try (Connection keyed = DriverManager.getConnection(args[1], props)) {
            metadata(keyed);
            prepared(keyed);
            batch(keyed);
        }
        try (Connection demo = DriverManager.getConnection(args[0], props)) {
            fetchSize(demo);
            cancel(demo, args[2]);
        }
    }

    static void metadata(Connection conn) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        check(md.getDatabaseProductVersion().startsWith("15"), "server version");
        List<String> tables = column(md.getTables(null, "shop", "%", new String[] {"TABLE"}), "TABLE_NAME");
        check(tables.equals(List.of("accounts", "entries")), "getTables: " + tables);
        System.out.println("ok getTables");

        ResultSet cols = md.getColumns(null, "shop", "accounts", "%");
        List<String> seen = new ArrayList<>();
        while (cols.next()) {
            seen.add(cols.getString("COLUMN_NAME") + ":" + cols.getInt("DATA_TYPE") + ":"
                     + cols.getString("TYPE_NAME") + ":" + cols.getInt("NULLABLE"));
        }
        check(seen.equals(List.of("id:" + Types.INTEGER + ":int4:0", "name:" + Types.VARCHAR + ":text:1",
                                  "balance:" + Types.NUMERIC + ":numeric:1")), "getColumns: " + seen);
        System.out.println("ok getColumns");

        List<String> schemas = column(md.getSchemas(), "TABLE_SCHEM");
        check(schemas.contains("shop") && schemas.contains("pg_catalog"), "getSchemas: " + schemas);
        System.out.println("ok getSchemas");

        List<String> types = column(md.getTypeInfo(), "TYPE_NAME");
        check(types.contains("int4") && types.contains("text") && types.contains("_int4"),
              "getTypeInfo: " + types);
        System.out.println("ok getTypeInfo");

        ResultSet pk = md.getPrimaryKeys(null, "shop", "entries");
        List<String> keys = new ArrayList<>();
        while (pk.next()) keys.add(pk.getString("COLUMN_NAME") + ":" + pk.getInt("KEY_SEQ") + ":" + pk.getString("PK_NAME"));
        check(keys.equals(List.of("account:1:entries_pkey", "line:2:entries_pkey")), "getPrimaryKeys: " + keys);
        System.out.println("ok getPrimaryKeys");
    }

    static void prepared(Connection conn) throws SQLException {
        // pgJDBC switches to a named server-side statement (and binary results) from the
        // fifth execution on (prepareThreshold).
        try (PreparedStatement ps = conn.prepareStatement(
                "select name, balance from accounts where id = ?")) {
            for (int i = 0; i < 6; i++) {
                ps.setInt(1, 1 + (i % 2));
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next(), "row " + i);
                    check(rs.getString(1).equals(i % 2 == 0 ? "alice" : "bob"), "name " + i);
                }
            }
        }
        System.out.println("ok prepared6");
    }

    static void batch(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.addBatch("SET application_name = 'batch-one'");
            st.addBatch("SET statement_timeout = 'not a duration'");
            st.addBatch("SET application_name = 'batch-three'");
            try {
                st.executeBatch();
                throw new AssertionError("the failing batch did not fail");
            } catch (BatchUpdateException expected) {
                check("22023".equals(expected.getSQLState()), "batch sqlstate " + expected.getSQLState());
            }
            try (ResultSet rs = st.executeQuery("select count(*) from entries")) {
                check(rs.next() && rs.getInt(1) == 2, "after batch");
            }
        }
        System.out.println("ok batch");
    }

    static void fetchSize(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.setFetchSize(50);
            long count = 0, last = -1;
            try (ResultSet rs = st.executeQuery("select o_orderkey from orders order by o_orderkey")) {
                while (rs.next()) {
                    long key = rs.getLong(1);
                    check(key > last, "ordered");
                    last = key;
                    count++;
                }
            }
            check(count == 15000, "fetched " + count);
        }
        conn.commit();
        conn.setAutoCommit(true);
        System.out.println("ok fetchSize");
    }

    static void cancel(Connection conn, String slowQuery) throws Exception {
        try (Statement st = conn.createStatement()) {
            Thread canceller = new Thread(() -> {
                try {
                    Thread.sleep(700);
                    st.cancel();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            canceller.start();
            try {
                st.executeQuery(slowQuery);
                throw new AssertionError("the slow query was not cancelled");
            } catch (SQLException expected) {
                check("57014".equals(expected.getSQLState()), "cancel sqlstate " + expected.getSQLState());
            }
            canceller.join();
            try (ResultSet rs = st.executeQuery("select 1")) {
                check(rs.next() && rs.getInt(1) == 1, "after cancel");
            }
        }
        System.out.println("ok cancel");
    }
}
