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
 *   <li>statements per minute while a program runs: quiet (only the heartbeat, once a minute),
 *       printing a line every 50 ms (the log tail, at most every 2 s), reporting progress every 100
 *       ms (at most every 2 s);
 *   <li>cancel latency of a silent program: from the cancel request to the job {@code cancelled},
 *       the cancel pushed to its worker as a stop (on the in-process platform, which requests the
 *       worker's {@code WorkerStop} as a worker process's SIGTERM hook does);
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
          p[0].startsWith("quiet")
              ? Math.max(seconds, QUIET_SECONDS)
              : p[0].contains("50 ms") ? seconds * 20 : seconds * 10;
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
   * A quiet program runs at least this long, so that its heartbeats (one a minute) are counted as
   * they come in a long build, not as one or none in a one-minute window.
   */
  static final int QUIET_SECONDS = 180;

  /** Cancel latencies of a silent program, and whether every one ended cancelled, not requeued. */
  record CancelLatencies(List<Double> millis, int endedCancelled, int interrupted) {}

  /**
   * {@code cancels} silent programs ({@code sleep}), each cancelled once it runs: milliseconds from
   * the cancel request to the job {@code cancelled}, polled every 2 ms.
   */
  /**
   * A cancel the queue never completes would leave the polls below spinning: the figure fails
   * instead, naming what it waited for. The polls themselves are the measurement (1–2 ms apart).
   */
  private static void giveUpAfter(long deadlineNanos, String waitingFor) {
    if (System.nanoTime() > deadlineNanos) {
      throw new IllegalStateException("gave up after a minute waiting for " + waitingFor);
    }
  }

  CancelLatencies cancelLatencies(int cancels) throws InterruptedException {
    List<Double> out = new java.util.ArrayList<>();
    int cancelled = 0;
    int interrupted = 0;
    for (int i = 0; i < cancels; i++) {
      Path started = dir.resolve("cancel-" + i + ".started");
      CommandKind kind = kind("silent", "touch '" + started + "'; sleep 600");
      try (QueueRig rig =
          new QueueRig(pg, "bq_exec_cancel", QueueConfig.defaults(), 4, handler(kind))) {
        long job = rig.queue.enqueue("u1", "silent", new Json("{}"), null).jobId();
        long deadline = System.nanoTime() + java.time.Duration.ofMinutes(1).toNanos();
        while (!Files.exists(started)) {
          giveUpAfter(deadline, "job " + job + "'s program to start");
          Thread.sleep(1);
        }
        long t0 = System.nanoTime();
        rig.queue.cancel(job, "u1");
        while (!status(rig, job).equals("cancelled")) {
          giveUpAfter(deadline, "job " + job + " to end cancelled");
          Thread.sleep(2);
        }
        out.add((System.nanoTime() - t0) / 1e6);
        rig.awaitAllEnded();
        cancelled++;
        interrupted +=
            rig.jdbc
                .query(
                    "select count(*) as n from build_job_event where job_id = :id and type = 'interrupted'",
                    buildqueue.db.Params.of("id", job))
                .get(0)
                .intValue("n");
      }
    }
    return new CancelLatencies(out, cancelled, interrupted);
  }

  private static String status(QueueRig rig, long job) {
    return rig.jdbc
        .query("select status from build_job where id = :id", buildqueue.db.Params.of("id", job))
        .get(0)
        .string("status");
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
