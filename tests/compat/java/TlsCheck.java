import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

/** Connects with the JDBC URL given (TLS settings in it) and prints the nation count. */
public class TlsCheck {
    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(args[0], "fedgate", "pw");
             Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM nation")) {
            rs.next();
            System.out.println("nations " + rs.getLong(1));
        }
    }
}
