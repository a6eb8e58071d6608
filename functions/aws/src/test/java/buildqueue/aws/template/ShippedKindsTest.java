package buildqueue.aws.template;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.testing.SampleEvents;
import buildqueue.core.QueueConfig;
import buildqueue.kinds.CommandKind;
import buildqueue.kinds.KindCatalogue;
import buildqueue.testing.RecordingJobContext;
import buildqueue.worker.JobOutcome;
import buildqueue.worker.QueueKindLimits;
import buildqueue.worker.exec.ProcessRunner;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalogue and programs the repository ships for AWS ({@code infra/kinds/kinds.json}, {@code
 * infra/programs/}) work together: each kind's sample payload passes its schema and its program
 * runs to success under the real process runner, with the image's program directory mapped to the
 * repository's. A kind added without a sample here fails the test, so the samples stay complete.
 */
class ShippedKindsTest {
  /** Where infra/Dockerfile puts infra/programs/ in the worker image. */
  private static final String IMAGE_PROGRAMS = "/opt/buildqueue/programs/";

  private static final Map<String, String> SAMPLES =
      Map.of(
          "hello", "{\"greeting\": \"hi\"}",
          "render-article", "{\"articleId\": \"a-1\", \"title\": \"Hello\", \"pages\": 3}");

  @TempDir Path work;

  @Test
  void every_shipped_kind_runs_its_sample_program_to_success() throws Exception {
    Assumptions.assumeTrue(
        onPath("node") || "true".equals(System.getenv("CI")), "needs node on the PATH");
    List<CommandKind> kinds =
        KindCatalogue.load(
                SampleEvents.repoFile("infra/kinds/kinds.json"),
                QueueKindLimits.of(QueueConfig.defaults()))
            .kinds();
    String programs = SampleEvents.repoFile("infra/programs").toAbsolutePath() + "/";
    Map<String, String> env = new HashMap<>(System.getenv());
    env.put(ProcessRunner.WORK_DIR, work.toString());
    ProcessRunner runner = ProcessRunner.forThisWorker(env);

    assertThat(kinds)
        .extracting(CommandKind::name)
        .containsExactlyInAnyOrderElementsOf(SAMPLES.keySet());
    for (CommandKind shipped : kinds) {
      CommandKind kind =
          new CommandKind(
              shipped.name(),
              shipped.command().stream().map(a -> a.replace(IMAGE_PROGRAMS, programs)).toList(),
              shipped.timeout(),
              shipped.payloadSchema(),
              shipped.retryExitCodes(),
              shipped.env(),
              shipped.cancelGracePeriod());
      String payload = SAMPLES.get(kind.name());
      kind.payloadSchema().check(new ObjectMapper().readTree(payload));
      RecordingJobContext context = RecordingJobContext.of(kind.name(), payload);

      JobOutcome outcome = runner.run(kind, context);

      assertThat(outcome)
          .as(kind.name() + ": " + context.lines(buildqueue.worker.JobLog.Stream.STDERR))
          .isEqualTo(JobOutcome.succeeded());
      assertThat(context.finalProgress()).as(kind.name()).isNotNull();
    }
  }

  private static boolean onPath(String program) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
        return true;
      }
    }
    return false;
  }
}
