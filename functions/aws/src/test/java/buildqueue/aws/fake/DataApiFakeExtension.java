package buildqueue.aws.fake;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * Hands tests a {@link DataApiFake} and a real SDK client pointed at it, one pair per test class.
 * Each test starts with no faults and zeroed counters, and fails if it left a transaction open.
 */
public final class DataApiFakeExtension
    implements ParameterResolver, BeforeEachCallback, AfterEachCallback {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(DataApiFakeExtension.class);

  @Override
  public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
    Class<?> type = p.getParameter().getType();
    return type == DataApiFake.class || type == RdsDataClient.class;
  }

  @Override
  public Object resolveParameter(ParameterContext p, ExtensionContext e) {
    Fixture f = fixture(e);
    return p.getParameter().getType() == DataApiFake.class ? f.fake : f.client;
  }

  @Override
  public void beforeEach(ExtensionContext e) {
    Fixture f = fixture(e);
    f.fake.clearFaults();
    f.fake.resetCounts();
  }

  @Override
  public void afterEach(ExtensionContext e) {
    if (e.getExecutionException().isEmpty()) {
      assertThat(fixture(e).fake.openTransactions())
          .as("transactions left open on the Data API fake")
          .isZero();
    }
  }

  private static Fixture fixture(ExtensionContext e) {
    ExtensionContext classContext =
        e.getTestClass().isPresent() && e.getTestMethod().isPresent()
            ? e.getParent().orElseThrow()
            : e;
    return classContext
        .getStore(NS)
        .getOrComputeIfAbsent("fixture", k -> new Fixture(), Fixture.class);
  }

  /** Closed by JUnit with the class's store. */
  private static final class Fixture implements AutoCloseable {
    final DataApiFake fake = DataApiFake.start();
    final RdsDataClient client = fake.newClient();

    @Override
    public void close() {
      client.close();
      fake.close();
    }
  }
}
