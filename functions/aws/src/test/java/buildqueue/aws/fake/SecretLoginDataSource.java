package buildqueue.aws.fake;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.function.Supplier;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Connections that log in with whatever a secret holds at the moment of connecting (the Data API
 * fake's view of a Secrets Manager secret). Nothing is pooled, so a changed secret counts at once.
 */
final class SecretLoginDataSource implements DataSource {
  private final String jdbcUrl;
  private final Supplier<SecretsManagerFake.Login> login;

  SecretLoginDataSource(String jdbcUrl, Supplier<SecretsManagerFake.Login> login) {
    if (jdbcUrl.contains("user=")) {
      // A URL's user wins over the login's: the secret would not count.
      throw new IllegalArgumentException("the JDBC URL must not name a user");
    }
    this.jdbcUrl = jdbcUrl;
    this.login = login;
  }

  @Override
  public Connection getConnection() throws SQLException {
    SecretsManagerFake.Login l = login.get();
    return getConnection(l.username(), l.password());
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", username);
    p.setProperty("password", password);
    return DriverManager.getConnection(jdbcUrl, p);
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
