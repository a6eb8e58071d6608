package buildqueue.local;

import buildqueue.BuildQueueException;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The runnable jar: {@code serve} runs the whole system; {@code try} runs one job on a queue of its
 * own; {@code token}, {@code submit}, {@code status}, {@code dedicated}, {@code quota}, {@code
 * cancel}, {@code retry}, {@code logs} and {@code reclaim} talk to a running server over HTTP with
 * a token they mint from the data directory's secret. Each command is a class of its own with its
 * usage beside its code; this one picks the command and turns its failures into exit codes.
 */
public final class Main {
  static final int OK = 0;
  static final int API_ERROR = 1;
  static final int USAGE = 2;
  static final int UNREACHABLE = 3;

  /** {@code try} stopped by Ctrl-C (SIGINT), as shells report it. */
  static final int INTERRUPTED = 130;

  static final String USAGE_TEXT =
      """
      usage: java -jar buildqueue-local.jar <command> [options]

      """
          + ServeCommand.USAGE
          + TryCommand.USAGE
          + TokenCommand.USAGE
          + SubmitCommand.USAGE
          + StatusCommand.USAGE
          + DedicatedCommand.USAGE
          + QuotaCommand.USAGE
          + UsageCommand.USAGE
          + CancelCommand.USAGE
          + PriorityCommand.USAGE
          + RunNextCommand.USAGE
          + LaneCommand.USAGE
          + RetryCommand.USAGE
          + LogsCommand.USAGE
          + ReclaimCommand.USAGE
          + ArtifactsCommand.USAGE
          + """

      Client commands also take --port, --data-dir (where the token secret is) and --json; or
      --api-url <the stack's ApiUrl> with --token <JWT> (or BUILDQUEUE_API_TOKEN) for a deployed API.
      An API that could not invoke its function (HTTP 500 "Internal Server Error", e.g. after 14
      idle days) is asked again, up to 6 times in ~23 s, for reads, quota and dedicated changes, and
      a submit with --key; any other request is not sent twice.
      An existing PostgreSQL's credentials come from BUILDQUEUE_DATABASE_USER and
      BUILDQUEUE_DATABASE_PASSWORD.
      """;

  private final Cli cli;

  /** The commands by name, in the order the usage text lists them. */
  private final Map<String, CliCommand> commands = new LinkedHashMap<>();

  Main(PrintStream out, PrintStream err, Map<String, String> env) {
    this.cli = new Cli(out, err, env);
    commands.put("serve", new ServeCommand(cli));
    commands.put("try", new TryCommand(cli));
    commands.put("token", new TokenCommand(cli));
    commands.put("submit", new SubmitCommand(cli));
    commands.put("status", new StatusCommand(cli));
    commands.put("dedicated", new DedicatedCommand(cli));
    commands.put("quota", new QuotaCommand(cli));
    commands.put("usage", new UsageCommand(cli));
    commands.put("cancel", new CancelCommand(cli));
    commands.put("priority", new PriorityCommand(cli));
    commands.put("run-next", new RunNextCommand(cli));
    commands.put("lane", new LaneCommand(cli));
    commands.put("retry", new RetryCommand(cli));
    commands.put("logs", new LogsCommand(cli));
    commands.put("reclaim", new ReclaimCommand(cli));
    commands.put("artifacts", new ArtifactsCommand(cli));
  }

  public static void main(String[] args) {
    // One line per log record, before any logger exists.
    System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tT %4$s %5$s%6$s%n");
    Main main = new Main(System.out, System.err, System.getenv());
    System.exit(main.run(args));
  }

  /** Runs a command; returns the exit code. */
  int run(String... args) {
    if (args.length == 0 || Set.of("help", "-h", "--help").contains(args[0])) {
      cli.out.print(USAGE_TEXT);
      return args.length == 0 ? USAGE : OK;
    }
    List<String> rest = Arrays.asList(args).subList(1, args.length);
    try {
      CliCommand command = commands.get(args[0]);
      if (command == null) {
        throw new CommandLine.UsageException(
            "unknown command \""
                + args[0]
                + "\"; the commands are "
                + String.join(", ", commands.keySet()));
      }
      return command.run(rest);
    } catch (CommandLine.UsageException e) {
      cli.err.println("buildqueue: " + e.getMessage());
      cli.err.println("run with --help for usage");
      return USAGE;
    } catch (Cli.RefusedException e) {
      return cli.problem(e.reply);
    } catch (ApiClient.UnreachableException e) {
      cli.err.println("buildqueue: " + e.getMessage());
      return UNREACHABLE;
    } catch (BuildQueueException e) {
      cli.err.println("buildqueue: " + e.getMessage());
      return API_ERROR;
    }
  }
}
