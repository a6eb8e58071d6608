package buildqueue.local;

import java.util.List;

/** A command of the CLI: parses its arguments, does its work and returns the exit code. */
@FunctionalInterface
interface CliCommand {
  int run(List<String> args);
}
