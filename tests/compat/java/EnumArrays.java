import java.sql.*;
import java.util.*;

/** pgJDBC's lists compared with a PostgreSQL enum column by `st = ANY(?)`: what a server
 *  answers, one line per check, so the test compares the gateway's lines with PostgreSQL's.
 *  Arguments: a JDBC URL, the user, then the statements (the `?` takes paid and new). */
public class EnumArrays {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        for (String stringtype : new String[] {"varchar", "unspecified"}) {
            props.setProperty("stringtype", stringtype);
            try (Connection conn = DriverManager.getConnection(args[0], props)) {
                for (int i = 2; i < args.length; i++) {
                    for (String how : new String[] {"text", "varchar", "status", "String[]"}) {
                        check(conn, stringtype, how, args[i]);
                    }
                }
            }
        }
    }

    private static void check(Connection conn, String stringtype, String how, String sql) {
        StringBuilder line = new StringBuilder(stringtype + " " + how + ":");
        String[] values = {"paid", "new"};
        try (PreparedStatement statement = conn.prepareStatement(sql)) {
            // six runs: past prepareThreshold (5), a named statement on the server
            for (int run = 0; run < 6; run++) {
                if (how.equals("String[]")) {
                    statement.setObject(1, values);
                } else {
                    statement.setArray(1, conn.createArrayOf(how, values));
                }
                List<String> rows = new ArrayList<>();
                try (ResultSet rs = statement.executeQuery()) {
                    while (rs.next()) {
                        rows.add(rs.getString(1));
                    }
                }
                if (run == 5) {
                    line.append(" rows=").append(rows);
                }
            }
            ParameterMetaData meta = statement.getParameterMetaData();
            line.append(" type=").append(meta.getParameterTypeName(1));
        } catch (SQLException e) {
            line.append(" error=").append(e.getSQLState()).append(" ")
                .append(e.getMessage().split("\n")[0]);
        }
        System.out.println(line);
    }
}
