package buildqueue.kinds;

import buildqueue.worker.JobContext;
import buildqueue.worker.JobHandler;
import buildqueue.worker.JobOutcome;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Objects;

/**
 * The handler of one {@link CommandKind}: the API checks payloads with the kind's {@code
 * payloadSchema}; the worker runs each job through the {@link CommandRunner} it was given.
 */
public final class CommandJobHandler implements JobHandler {
  private final CommandKind kind;
  private final CommandRunner runner;

  public CommandJobHandler(CommandKind kind, CommandRunner runner) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.runner = Objects.requireNonNull(runner, "runner");
  }

  public CommandKind commandKind() {
    return kind;
  }

  @Override
  public String kind() {
    return kind.name();
  }

  @Override
  public void validate(JsonNode payload) {
    kind.payloadSchema().check(payload);
  }

  @Override
  public JobOutcome run(JobContext context) throws InterruptedException {
    return runner.run(kind, context);
  }
}
