package buildqueue.testing;

import buildqueue.db.Database;
import java.util.ServiceLoader;

/**
 * A {@link Database} adapter the queue suite runs on. The suite asks {@link #selected()} for its
 * adapter: JDBC by default; another module runs the same test classes (from this module's test-jar)
 * with {@code -Dbuildqueue.test.adapter=<name>} and registers its adapter through {@code
 * META-INF/services/buildqueue.testing.TestAdapter}.
 */
public interface TestAdapter {
  String PROPERTY = "buildqueue.test.adapter";

  String name();

  /** The adapter under test over this test database. */
  Database open(TestDatabase db);

  /** The adapter under test over this test database, connected as the worker role (V005). */
  Database openAsWorker(TestDatabase db);

  static TestAdapter selected() {
    String wanted = System.getProperty(PROPERTY, "jdbc");
    if (wanted.equals("jdbc")) {
      return Jdbc.INSTANCE;
    }
    for (TestAdapter a : ServiceLoader.load(TestAdapter.class)) {
      if (a.name().equals(wanted)) {
        return a;
      }
    }
    throw new IllegalStateException("no TestAdapter named " + wanted + " on the test classpath");
  }

  /** The JDBC adapter: the test database's own pool. */
  final class Jdbc implements TestAdapter {
    static final Jdbc INSTANCE = new Jdbc();

    @Override
    public String name() {
      return "jdbc";
    }

    @Override
    public Database open(TestDatabase db) {
      return db.jdbc();
    }

    @Override
    public Database openAsWorker(TestDatabase db) {
      return db.worker();
    }
  }
}
