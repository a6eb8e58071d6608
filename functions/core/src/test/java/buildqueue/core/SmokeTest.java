package buildqueue.core;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class SmokeTest {
  @Test
  void a_demo_job_runs_to_success(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      long id = h.submit("alice", "demo", "{\"steps\": 3, \"stepMillis\": 1}");
      h.awaitStatus(id, "succeeded");
      h.awaitWorkersExited();
      System.out.println(h.events(id));
      System.out.println(h.workers());
      assertThat(h.job(id).intValue("progress")).isEqualTo(3);
    }
  }
}
