package buildqueue.testing;

import buildqueue.db.Database;
import buildqueue.db.JdbcDatabase;
import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;

/** A fresh database for one test, with the production schema. */
public final class TestDatabase implements AutoCloseable {
  private final String name;
  private final HikariDataSource dataSource;
  private final Runnable drop;
  private final Database jdbc;

  TestDatabase(String name, HikariDataSource dataSource, Runnable drop) {
    this.name = name;
    this.dataSource = dataSource;
    this.drop = drop;
    this.jdbc = new JdbcDatabase(dataSource);
  }

  public String name() {
    return name;
  }

  public String jdbcUrl() {
    return TestDatabases.jdbcUrl(name);
  }

  public DataSource dataSource() {
    return dataSource;
  }

  /** The JDBC adapter over this database. Tests read and check state through it. */
  public Database jdbc() {
    return jdbc;
  }

  @Override
  public void close() {
    dataSource.close();
    drop.run();
  }
}
