package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.testing.CheckedDatabase;
import buildqueue.testing.ManualPlatform;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestAdapter;
import buildqueue.testing.TestDatabase;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A dispatch that fails after the caller's transition committed must not fail the caller. */
@ExtendWith(PostgresExtension.class)
class DispatchFailureTest {

  /**
   * Fails every dispatch statement (the call of build_lane_dispatch) while {@code failing} is set.
   */
  private static Database failingDispatch(Database target, AtomicBoolean failing) {
    return new CheckedDatabase(
        target,
        sql -> {
          if (failing.get() && sql != null && sql.contains("build_lane_dispatch(")) {
            throw new DatabaseException("ERROR: deadlock detected (injected)");
          }
        });
  }

  @Test
  void an_enqueue_whose_dispatch_fails_still_returns_its_job_and_the_tick_dispatches_it(
      TestDatabase tdb) {
    AtomicBoolean failing = new AtomicBoolean(true);
    ManualPlatform platform = new ManualPlatform();
    QueueConfig config = QueueConfig.defaults();
    BuildQueue queue =
        new BuildQueue(
            failingDispatch(TestAdapter.selected().open(tdb), failing),
            platform,
            config,
            QueueClock.DATABASE);

    long job = queue.enqueue("alice", "noop", new Json("{}"), null).jobId();

    assertThat(
            tdb.jdbc().query("select status from build_job where id = :id", Params.of("id", job)))
        .extracting(r -> r.string("status"))
        .containsExactly("queued");
    failing.set(false);
    queue.tick();
    assertThat(
            tdb.jdbc().query("select status from build_job where id = :id", Params.of("id", job)))
        .extracting(r -> r.string("status"))
        .containsExactly("dispatched");
    assertThat(platform.launches()).hasSize(1);
  }
}
