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
        token <user> [--admin] [--hours 24]
            Prints a token for the API and the dashboard (--admin: may see every lane and job).
      """;

  @Override
  public int run(List<String> args) {
    CommandLine cl = CommandLine.parse("token", args, Set.of("data-dir", "hours"), Set.of("admin"));
    String user = cl.positional(0, "a user id: token <user> [--admin]");
    cl.atMostPositionals(1, "token <user> [--admin] [--hours N]");
    int hours = cl.intValue("hours", 24, 1, (int) LocalTokens.MAX_LIFETIME.toHours());
    cli.out.println(ApiConnection.tokens(cl).mint(user, cl.has("admin"), Duration.ofHours(hours)));
    return Main.OK;
  }
}
