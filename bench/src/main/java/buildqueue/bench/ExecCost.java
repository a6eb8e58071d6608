package buildqueue.bench;

import buildqueue.core.QueueConfig;
import buildqueue.db.Json;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.PayloadSchema;
import buildqueue.worker.CommandJobHandler;
import buildqueue.worker.exec.ProcessRunner;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Figure 8: what a job that runs a program costs, beyond a job handled in the worker's JVM. The
 * real {@link ProcessRunner} runs shell programs under the real worker loop over JDBC; statements
 * are counted at the {@code Database} port.
 *
 * <ul>
 *   <li>statements per minute while a program runs: quiet (only the cancel check), printing a line
 *       every 50 ms (the log tail, at most every 2 s), reporting progress every 100 ms (at most
 *       once a second);
 *   <li>the start cost per job: N jobs chained on one worker, each running {@code true}, against N
 *       {@code noop} jobs handled in the JVM.
 * </ul>
 */
final class ExecCost {
  /** A program's statements per minute of running, and what it did. */
  record Rate(String program, double statementsPerMinute) {}

  private final BenchPostgres pg;
  private final Path dir;

  ExecCost(BenchPostgres pg) {
    this.pg = pg;
    try {
      this.dir = Files.createTempDirectory("bq-exec-cost");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static final List<String[]> PROGRAMS =
      List.of(
          new String[] {"quiet", "sleep %d"},
          new String[] {
            "prints a line every 50 ms",
            "i=0; while [ $i -lt %d ]; do echo \"line $i of output\"; "
                + "sleep 0.05; i=$((i+1)); done"
          },
          new String[] {
            "reports progress every 100 ms",
            "i=0; while [ $i -lt %d ]; do "
                + "echo \"{\\\"progress\\\": $i}\" >> \"$BUILDQUEUE_CONTROL\"; sleep 0.1; i=$((i+1)); done"
          });

  /**
   * One program job of each sort, run for {@code seconds}: statements beyond a fresh job's seven,
   * per minute.
   */
  List<Rate> rates(int seconds) throws InterruptedException {
    List<Rate> out = new java.util.ArrayList<>();
    for (String[] p : PROGRAMS) {
      int n =
          p[0].startsWith("quiet") ? seconds : p[0].contains("50 ms") ? seconds * 20 : seconds * 10;
      CommandKind kind = kind("program", p[1].formatted(n));
      try (QueueRig rig = new QueueRig(pg, "bq_exec", QueueConfig.defaults(), 4, handler(kind))) {
        long t0 = System.nanoTime();
        rig.queue.enqueue("u1", "program", new Json("{}"), null);
        rig.awaitAllEnded();
        double minutes = (System.nanoTime() - t0) / 60e9;
        out.add(new Rate(p[0], (rig.db.statements() - 7) / minutes));
      }
    }
    return out;
  }

  /**
   * Milliseconds per job, {@code jobs} jobs chained on one worker: {@code noop} in the JVM, then
   * {@code true}.
   */
  double[] perJobMillis(int jobs) throws InterruptedException {
    CommandKind trueKind = kind("true", "true");
    double[] out = new double[2];
    String[] kinds = {"noop", "true"};
    for (int k = 0; k < 2; k++) {
      try (QueueRig rig =
          new QueueRig(pg, "bq_exec_start", QueueConfig.defaults(), 4, handler(trueKind))) {
        long gate =
            rig.queue
                .enqueue("u1", buildqueue.testing.GateHandler.KIND, new Json("{}"), null)
                .jobId();
        rig.gate.awaitEntered(gate);
        for (int i = 0; i < jobs; i++) {
          rig.queue.enqueue("u1", kinds[k], new Json("{}"), null);
        }
        long t0 = System.nanoTime();
        rig.gate.open(gate);
        rig.awaitAllEnded();
        out[k] = (System.nanoTime() - t0) / 1e6 / jobs;
      }
    }
    return out;
  }

  private CommandKind kind(String name, String script) {
    return new CommandKind(
        name,
        List.of("sh", "-c", script),
        Duration.ofMinutes(10),
        PayloadSchema.ANY_OBJECT,
        Set.of(),
        Map.of(),
        Duration.ofSeconds(5));
  }

  private CommandJobHandler handler(CommandKind kind) {
    Map<String, String> env = new java.util.HashMap<>(System.getenv());
    env.put(ProcessRunner.WORK_DIR, dir.toString());
    return new CommandJobHandler(kind, ProcessRunner.forThisWorker(env));
  }
}
