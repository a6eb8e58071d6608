package buildqueue.testing;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Hands each test (or {@code @BeforeEach}) a fresh {@link TestDatabase} on the shared embedded
 * PostgreSQL, and drops it after the test.
 */
public final class PostgresExtension implements ParameterResolver, AfterEachCallback {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(PostgresExtension.class);

  @Override
  public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
    return p.getParameter().getType() == TestDatabase.class;
  }

  @Override
  public Object resolveParameter(ParameterContext p, ExtensionContext e) {
    return e.getStore(NS)
        .getOrComputeIfAbsent("db", k -> TestDatabases.create(), TestDatabase.class);
  }

  @Override
  public void afterEach(ExtensionContext e) {
    TestDatabase db = e.getStore(NS).remove("db", TestDatabase.class);
    if (db != null) {
      db.close();
    }
  }
}
