package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.db.Json;
import buildqueue.db.Params;
import buildqueue.platform.WorkerLaunch;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.time.Instant;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What a job's history says when its worker could not be started. */
@ExtendWith(PostgresExtension.class)
class LaunchFailureMessageTest {

  /**
   * The retry time is printed as UTC with a Z whatever the session's time zone: pgjdbc opens its
   * sessions in the JVM's zone, so a server run outside UTC must not print local time with a Z.
   */
  @ParameterizedTest
  @ValueSource(strings = {"UTC", "America/New_York", "Asia/Kolkata"})
  void the_retry_time_of_a_capacity_failure_is_utc_in_any_session_time_zone(
      String zone, TestDatabase tdb) {
    QueueConfig config = QueueConfig.defaults();
    QueueClock clock = new QueueClock.Settable(Instant.parse("2026-12-01T10:00:00Z"));

    String message =
        tdb.jdbc()
            .transaction(
                tx -> {
                  tx.query("select set_config('TimeZone', :zone, true)", Params.of("zone", zone));
                  JobTransitions jobs = new JobTransitions(tx, config, clock);
                  DispatchTransitions dispatch = new DispatchTransitions(tx, config, clock);
                  JobTransitions.Enqueued job = jobs.enqueue("alice", "noop", new Json("{}"), null);
                  WorkerLaunch launch = dispatch.dispatch(job.lane()).orElseThrow().launch();
                  new ExitTransitions(tx, config, clock)
                      .launchFailed(launch, "RESOURCE:MEMORY", true);
                  return tx.query(
                          "select detail->>'message' as m from build_job_event where job_id = :id and type = 'launch-failed'",
                          Params.of("id", job.jobId()))
                      .get(0)
                      .string("m");
                });

    assertThat(message)
        .isEqualTo("worker not started (RESOURCE:MEMORY), retrying after 2026-12-01T10:00:10Z");
  }
}
