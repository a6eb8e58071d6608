package buildqueue.local;

import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * {@code token}: prints a token for the API and the dashboard, minted from the data directory's
 * secret.
 */
record TokenCommand(Cli cli) implements CliCommand {
  static final String USAGE =
      """
        token <user> [--admin | --read-only] [--hours 24]
            Prints a token for the API and the dashboard (--admin: may see every lane and job;
            --read-only: may see what an admin sees and change nothing).
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl =
        CommandLine.parse("token", args, Set.of("data-dir", "hours"), Set.of("admin", "read-only"));
    String user = cl.positional(0, "a user id: token <user> [--admin | --read-only]");
    cl.atMostPositionals(1, "token <user> [--admin | --read-only] [--hours N]");
    if (cl.has("admin") && cl.has("read-only")) {
      throw new CommandLine.UsageException(
          "give --admin or --read-only, not both: a read-only token changes nothing");
    }
    int hours = cl.intValue("hours", 24, 1, (int) LocalTokens.MAX_LIFETIME.toHours());
    cli.out.println(
        ApiConnection.tokens(cl)
            .mint(user, cl.has("admin"), cl.has("read-only"), Duration.ofHours(hours)));
    return Main.OK;
  }
}
