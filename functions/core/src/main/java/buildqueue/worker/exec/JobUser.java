package buildqueue.worker.exec;

import buildqueue.BuildQueueException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * The unprivileged OS user a root worker runs its jobs' programs as ({@value #VARIABLE}): its
 * programs then cannot read the worker's environment ({@code /proc/<pid>/environ} is its owner's
 * only), nor the server's data directory. The worker hands each attempt's {@code work/}, {@code
 * tmp/}, {@code home/} and control file to this user, and nothing else.
 *
 * @param name the user's name, as {@code /etc/passwd} has it
 * @param uid its user id
 * @param gid its primary group id
 */
public record JobUser(String name, int uid, int gid) {
  /** The user a root worker's jobs run as; unset, they run as the worker's own user. */
  public static final String VARIABLE = "BUILDQUEUE_JOB_USER";

  /** The job user the worker's environment names, if any. */
  public static Optional<JobUser> fromEnvironment(Map<String, String> env) {
    String name = env.get(VARIABLE);
    return name == null || name.isBlank() ? Optional.empty() : Optional.of(lookup(name.strip()));
  }

  /**
   * Finds the user in {@code /etc/passwd}.
   *
   * @throws BuildQueueException there is no such user, or it is root
   */
  public static JobUser lookup(String name) {
    if (!name.matches("[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")) {
      throw new BuildQueueException("job user " + show(name) + " is not a user name");
    }
    String passwd;
    try {
      passwd = Files.readString(Path.of("/etc/passwd"), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new BuildQueueException(
          "cannot read /etc/passwd to find job user " + name + ": " + e.getMessage());
    }
    for (String line : passwd.split("\n")) {
      String[] f = line.split(":", -1);
      if (f.length >= 4 && f[0].equals(name)) {
        try {
          int uid = Integer.parseInt(f[2]);
          int gid = Integer.parseInt(f[3]);
          if (uid == 0) {
            throw new BuildQueueException(
                "job user " + name + " has uid 0: jobs must run as an unprivileged user");
          }
          return new JobUser(name, uid, gid);
        } catch (NumberFormatException e) {
          break;
        }
      }
    }
    throw new BuildQueueException(
        "job user "
            + name
            + " does not exist on this machine (not in /etc/passwd);"
            + " create it, or name another with --job-user");
  }

  /** Whether this process runs as root: only then can it run programs as another user. */
  public static boolean runningAsRoot() {
    try {
      return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | RuntimeException e) {
      return "root".equals(System.getProperty("user.name"));
    }
  }

  private static String show(String name) {
    return name.length() > 40 ? "'" + name.substring(0, 40) + "…'" : "'" + name + "'";
  }
}
