package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.DataApiFake.Operation;
import buildqueue.aws.fake.DataApiFakeExtension;
import buildqueue.aws.fake.Fault;
import buildqueue.db.Database;
import buildqueue.db.DatabaseException;
import buildqueue.db.Params;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;
import software.amazon.awssdk.services.rdsdata.model.DatabaseResumingException;

/** An auto-paused Aurora Serverless v2 cluster: calls wait for the resume, within a budget. */
@ExtendWith({PostgresExtension.class, DataApiFakeExtension.class})
class DataApiResumeTest {

  @Test
  void a_statement_is_retried_with_backoff_while_the_database_resumes(
      TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    Adapters.FakeTime time = new Adapters.FakeTime();
    Database db = Adapters.dataApi(fake, client, tdb, time.retry(Duration.ofSeconds(30)));
    fake.resumingForNextCalls(3);
    assertThat(db.query("select 1 as one").get(0).longValue("one")).isEqualTo(1);
    assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(4);
    assertThat(time.sleeps)
        .containsExactly(Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(2));
  }

  @Test
  void begin_and_commit_wait_for_the_resume_too(
      TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    Adapters.FakeTime time = new Adapters.FakeTime();
    Database db = Adapters.dataApi(fake, client, tdb, time.retry(Duration.ofSeconds(30)));
    fake.inject(Fault.resuming().on(Operation.BEGIN).times(2));
    fake.inject(Fault.resuming().on(Operation.COMMIT).times(1));
    db.transaction(
        tx -> tx.update("insert into build_user (user_id) values (:u)", Params.of("u", "alice")));
    assertThat(tdb.jdbc().query("select user_id from build_user")).hasSize(1);
    assertThat(fake.calls(Operation.BEGIN)).isEqualTo(3);
    assertThat(fake.calls(Operation.COMMIT)).isEqualTo(2);
    assertThat(time.sleeps).hasSize(3);
  }

  @Test
  void the_retry_gives_up_after_its_budget_with_a_clear_message(
      TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    Adapters.FakeTime time = new Adapters.FakeTime();
    Database db = Adapters.dataApi(fake, client, tdb, time.retry(Duration.ofSeconds(30)));
    fake.resumingFor(Duration.ofHours(1));
    assertThatThrownBy(
            () ->
                db.update(
                    """
            insert into build_user (user_id)
            values ('alice')"""))
        .isExactlyInstanceOf(DatabaseException.class)
        .hasMessageContaining(
            "still resuming from auto-pause after 9 attempts over 27 s (budget 30 s)")
        .hasMessageContaining("nothing was run: statement insert into build_user (user_id)")
        .hasCauseInstanceOf(DatabaseResumingException.class);
    // 0.5 + 1 + 2 + 4 + 5 + 5 + 5 + 5 = 27.5 s; one more 5 s pause would pass the budget.
    assertThat(time.slept()).isEqualTo(Duration.ofMillis(27_500));
    assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(9);
    assertThat(tdb.jdbc().query("select user_id from build_user")).isEmpty();
  }

  @Test
  void a_resume_that_ends_within_the_budget_is_ridden_out_in_real_time(
      TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    Database db =
        Adapters.dataApi(
            fake,
            client,
            tdb,
            new ResumeRetry(
                Duration.ofSeconds(10), d -> Thread.sleep(d.toMillis()), System::nanoTime));
    fake.resumingFor(Duration.ofMillis(700));
    assertThat(db.query("select 1 as one")).hasSize(1);
    assertThat(fake.calls(Operation.EXECUTE)).isBetween(2L, 3L);
  }

  @Test
  void other_errors_are_not_waited_for(TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    Adapters.FakeTime time = new Adapters.FakeTime();
    Database db = Adapters.dataApi(fake, client, tdb, time.retry(Duration.ofSeconds(30)));
    fake.inject(Fault.error(504, "DatabaseUnavailableException", "writer unavailable"));
    assertThatThrownBy(() -> db.query("select 1 as one")).isInstanceOf(DatabaseException.class);
    assertThat(fake.calls(Operation.EXECUTE)).isEqualTo(1);
    assertThat(time.sleeps).isEmpty();
  }

  @Test
  void an_interrupted_wait_gives_up_and_keeps_the_interrupt(
      TestDatabase tdb, DataApiFake fake, RdsDataClient client) {
    Database db =
        Adapters.dataApi(
            fake,
            client,
            tdb,
            new ResumeRetry(
                Duration.ofSeconds(30),
                d -> {
                  throw new InterruptedException("shutting down");
                },
                System::nanoTime));
    fake.resumingForNextCalls(1);
    try {
      assertThatThrownBy(() -> db.query("select 1 as one"))
          .isInstanceOf(DatabaseException.class)
          .hasMessageContaining("interrupted while waiting for the Aurora cluster to resume");
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }
}
