package buildqueue.worker.exec;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.Procs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JobSessionTest {
  @TempDir Path tmp;

  private static String statOf(long pid) throws Exception {
    return Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
  }

  @Test
  void a_recorded_session_names_its_processes_until_they_are_killed() throws Exception {
    Process leader = new ProcessBuilder("setsid", "sh", "-c", "sleep 1000 & sleep 1000").start();
    try {
      Path record = Files.writeString(tmp.resolve("session"), statOf(leader.pid()));
      JobSession session = JobSession.readFrom(record).orElseThrow();
      Await.until("the shell and its two sleeps", () -> session.members().size() == 3);

      assertThat(session.sid()).isEqualTo(leader.pid());
      assertThat(session.killAll(Duration.ofSeconds(10))).isZero();
      assertThat(Procs.inSessionOrGroup(leader.pid())).isEmpty();
    } finally {
      leader.destroyForcibly();
    }
  }

  @Test
  void a_recorded_session_whose_pid_now_belongs_to_another_process_names_nothing()
      throws Exception {
    Process leader = new ProcessBuilder("setsid", "sleep", "1000").start();
    try {
      String stat = statOf(leader.pid());
      String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      long ticks = Long.parseLong(after[19]);
      // The same pid, started at another time: the record's process is gone and the pid reused.
      Path record =
          Files.writeString(
              tmp.resolve("session"), stat.replace(" " + ticks + " ", " " + (ticks - 1) + " "));

      JobSession session = JobSession.readFrom(record).orElseThrow();

      assertThat(session.startTicks()).isEqualTo(ticks - 1);
      assertThat(session.members()).isEmpty();
      assertThat(Procs.alive(leader.pid())).isTrue();
    } finally {
      leader.destroyForcibly();
    }
  }

  @Test
  void an_unreadable_record_names_no_session() throws Exception {
    assertThat(JobSession.readFrom(tmp.resolve("missing"))).isEmpty();
    assertThat(JobSession.readFrom(Files.writeString(tmp.resolve("garbage"), "not a stat line")))
        .isEmpty();
  }
}
