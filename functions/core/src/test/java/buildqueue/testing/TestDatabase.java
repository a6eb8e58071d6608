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
  private HikariDataSource workerPool;
  private Database worker;

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

  /**
   * The JDBC adapter connected as the worker role (V005): it may call the worker transitions'
   * functions and nothing else. Workers in tests run on it, as they do in production.
   */
  public synchronized Database worker() {
    if (worker == null) {
      worker = new JdbcDatabase(workerDataSource());
    }
    return worker;
  }

  /** The pool behind {@link #worker()}: connections that log in as the worker role. */
  public synchronized DataSource workerDataSource() {
    if (workerPool == null) {
      workerPool = TestDatabases.workerPool(name, 8);
    }
    return workerPool;
  }

  @Override
  public void close() {
    synchronized (this) {
      if (workerPool != null) {
        workerPool.close();
      }
    }
    dataSource.close();
    drop.run();
  }
}
