package buildqueue.worker.exec;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.Await;
import buildqueue.testing.Procs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A worker that halts (its hard deadline, a demo crash) takes its job's processes with it. */
class HaltTest {
  @TempDir Path tmp;

  @Test
  void halt_kills_the_running_jobs_processes() throws Exception {
    Path base = tmp.resolve("jobs");
    Path pids = tmp.resolve("pids");
    String java = ProcessHandle.current().info().command().orElse("java");
    Process worker =
        new ProcessBuilder(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                HaltingWorker.class.getName(),
                base.toString(),
                pids.toString())
            .redirectErrorStream(true)
            .redirectOutput(tmp.resolve("worker.out").toFile())
            .start();
    try {
      assertThat(worker.waitFor(90, TimeUnit.SECONDS)).as("the worker halts").isTrue();
      assertThat(worker.exitValue())
          .as("halt's exit code; output: %s", Files.readString(tmp.resolve("worker.out")))
          .isEqualTo(137);
      List<Long> jobPids = Procs.pidsIn(pids);
      assertThat(jobPids).hasSize(2);

      Await.until("the job's processes to die", () -> jobPids.stream().noneMatch(Procs::alive));
      assertThat(Procs.inSessionOrGroup(jobPids.get(1))).isEmpty();
      try (var dirs = Files.list(base)) {
        assertThat(dirs)
            .as(
                "the job's directory: halting skips the runner's own cleanup, so only HALT killed them")
            .hasSize(1);
      }
    } finally {
      worker.destroyForcibly();
      Procs.pidsIn(pids)
          .forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
    }
  }
}
