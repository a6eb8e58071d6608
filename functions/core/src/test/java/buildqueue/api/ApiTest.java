package buildqueue.api;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A test of the API with a fresh {@link ApiFixture} for each test method ({@code f}), closed after
 * it. A class that needs other settings overrides {@link #fixture}.
 */
@ExtendWith(PostgresExtension.class)
abstract class ApiTest {
  ApiFixture f;

  @BeforeEach
  final void openFixture(TestDatabase tdb) {
    f = fixture(tdb);
  }

  ApiFixture fixture(TestDatabase tdb) {
    return new ApiFixture(tdb);
  }

  @AfterEach
  final void closeFixture() {
    f.close();
  }
}
