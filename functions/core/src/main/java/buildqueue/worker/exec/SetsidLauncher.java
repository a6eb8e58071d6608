package buildqueue.worker.exec;

import buildqueue.BuildQueueException;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Starts a job's program as {@code setsid /bin/sh -c <record, then exec> <program> <args…>}: the
 * program becomes the leader of a session and process group of its own, so that everything it
 * starts can be found and killed with it, and no signal meant for the worker reaches it.
 * util-linux's {@code setsid} calls {@code setsid()} and then execs in its own process when it is
 * not a process group leader, which a child of the JVM never is; the shell writes its own {@code
 * /proc/<pid>/stat} line to the job's {@code session} file and execs the program in its place. So
 * the process the JDK watches is the program itself (its exit value is the program's), and the
 * session is on disk before the program runs: a worker killed at any moment leaves a record of what
 * to kill ({@link LeftoverJobs}). {@link #find} checks these facts once per worker.
 */
public final class SetsidLauncher implements ProcessLauncher {
  private static final File DEV_NULL = new File("/dev/null");
  private static final String SHELL = "/bin/sh";

  /** Names the session file for the shell; unset before the program starts. */
  static final String SESSION_VARIABLE = "BUILDQUEUE_SESSION_FILE";

  /** Records the session (builtins only: no process of its own), then becomes the program. */
  private static final String RECORD_THEN_EXEC =
      "{ read -r stat < /proc/$$/stat && echo \"$stat\" > \"$"
          + SESSION_VARIABLE
          + "\"; } || exit 125; unset "
          + SESSION_VARIABLE
          + "; exec \"$@\"";

  /**
   * The shell's $0: what it calls itself in its messages ("buildqueue: 1: exec: node: not found").
   */
  private static final String SHELL_NAME = "buildqueue";

  private final Path setsid;

  /** Where jobs run as another user: {@code setpriv} and that user. */
  private final Optional<Path> setpriv;

  private final Optional<JobUser> user;

  private SetsidLauncher(Path setsid, Optional<Path> setpriv, Optional<JobUser> user) {
    this.setsid = setsid;
    this.setpriv = setpriv;
    this.user = user;
  }

  /**
   * Finds {@code setsid} on the worker's {@code PATH} (or in {@code /usr/bin}, {@code /bin}) and
   * checks that it runs a program in place as the leader of a new session.
   *
   * @throws BuildQueueException it is missing or behaves otherwise; the message says what to do
   */
  public static SetsidLauncher find(Map<String, String> workerEnvironment) {
    Path found =
        tool(
            "setsid",
            workerEnvironment,
            "a worker runs each job's program in a session of its own"
                + " through util-linux's setsid");
    Optional<JobUser> user = JobUser.fromEnvironment(workerEnvironment);
    Optional<Path> setpriv = Optional.empty();
    if (user.isPresent()) {
      if (!JobUser.runningAsRoot()) {
        throw new BuildQueueException(
            JobUser.VARIABLE
                + " names "
                + user.get().name()
                + ", but this worker does not"
                + " run as root and cannot run programs as another user");
      }
      setpriv =
          Optional.of(
              tool(
                  "setpriv",
                  workerEnvironment,
                  "a root worker runs each job's program as "
                      + user.get().name()
                      + " through util-linux's setpriv"));
    }
    SetsidLauncher launcher = new SetsidLauncher(found, setpriv, user);
    launcher.checkRunsInPlace();
    return launcher;
  }

  private static Path tool(String name, Map<String, String> workerEnvironment, String why) {
    Set<Path> candidates = new LinkedHashSet<>();
    String path = workerEnvironment.getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      if (!dir.isBlank()) {
        candidates.add(Path.of(dir, name));
      }
    }
    candidates.add(Path.of("/usr/bin", name));
    candidates.add(Path.of("/bin", name));
    return candidates.stream()
        .filter(Files::isExecutable)
        .findFirst()
        .orElseThrow(
            () ->
                new BuildQueueException(
                    name
                        + " was not found (looked in "
                        + candidates.stream()
                            .map(Path::getParent)
                            .map(Path::toString)
                            .distinct()
                            .reduce((a, b) -> a + ", " + b)
                            .orElse("")
                        + "): "
                        + why
                        + "; install util-linux in the worker's image"));
  }

  /** The user the programs run as, if not the worker's own. */
  public Optional<JobUser> jobUser() {
    return user;
  }

  /** The {@code setsid} this launcher runs. */
  public Path setsid() {
    return setsid;
  }

  /**
   * Starts {@code cat /proc/self/stat} as a job's program is started: the pid and session {@code
   * cat} reports must both be the pid the JDK started, and the session file must name it. A {@code
   * setsid} that forked instead would leave the JDK watching a process that exits at once while the
   * program runs on unwatched.
   */
  private void checkRunsInPlace() {
    Process p;
    Path record;
    try {
      record = Files.createTempFile("buildqueue-setsid-check", ".stat");
    } catch (IOException e) {
      throw new BuildQueueException(
          "cannot try " + setsid + ": no temporary file (" + e.getMessage() + ")");
    }
    try {
      ProcessBuilder builder =
          new ProcessBuilder(argv(List.of("cat", "/proc/self/stat")))
              .redirectInput(DEV_NULL)
              .redirectErrorStream(true);
      builder.environment().put(SESSION_VARIABLE, record.toString());
      p = builder.start();
    } catch (IOException e) {
      throw new BuildQueueException(
          setsid + " cannot be run (" + e.getMessage() + "); a worker needs util-linux's setsid");
    }
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readNBytes(4096), StandardCharsets.ISO_8859_1);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new BuildQueueException(setsid + " did not finish a trial run within 10 s");
      }
    } catch (IOException e) {
      throw new BuildQueueException(
          "could not read a trial run of " + setsid + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BuildQueueException("interrupted while trying " + setsid);
    }
    String[] fields = fieldsAfterName(out);
    String expected = Long.toString(p.pid());
    boolean recorded =
        JobSession.readFrom(record)
            .map(r -> r.sid() == p.pid() && r.startTicks() > 0)
            .orElse(false);
    try {
      Files.deleteIfExists(record);
    } catch (IOException e) {
      // a temporary file
    }
    if (fields == null
        || !out.startsWith(expected + " ")
        || !fields[3].equals(expected)
        || !recorded) {
      throw new BuildQueueException(
          setsid
              + " with "
              + SHELL
              + " does not run a program in place as the leader of a"
              + " new session (a trial run as pid "
              + expected
              + " reported: "
              + out.strip()
              + "); a worker needs"
              + " util-linux's setsid");
    }
  }

  private List<String> argv(List<String> command) {
    List<String> argv = new ArrayList<>(command.size() + 5);
    argv.add(setsid.toString());
    argv.add(SHELL);
    argv.add("-c");
    argv.add(RECORD_THEN_EXEC);
    argv.add(SHELL_NAME);
    argv.addAll(command);
    return argv;
  }

  /**
   * As {@link #argv}, with the program run as the job user: the shell, still the worker's user,
   * records the session (a file the job cannot then rewrite to name other processes), then execs
   * {@code setpriv}, which changes its user and groups and execs the program, in the same process.
   */
  private List<String> jobArgv(List<String> command) {
    if (user.isEmpty()) {
      return argv(command);
    }
    JobUser u = user.get();
    List<String> asUser = new ArrayList<>(command.size() + 5);
    asUser.add(setpriv.orElseThrow().toString());
    asUser.add("--reuid=" + u.uid());
    asUser.add("--regid=" + u.gid());
    asUser.add("--init-groups");
    asUser.add("--");
    asUser.addAll(command);
    return argv(asUser);
  }

  /**
   * Where programs run as the job user: the attempt's {@code work/}, {@code tmp/}, {@code home/}
   * and control file become that user's, the payload readable, and the directories above them
   * traversable but not listable; the session file and everything else stay the worker's.
   */
  @Override
  public void prepare(JobDirectory dir) throws IOException {
    if (user.isEmpty()) {
      return;
    }
    JobUser u = user.get();
    for (Path p : List.of(dir.work(), dir.tmp(), dir.home(), dir.artifacts(), dir.control())) {
      Files.setAttribute(p, "unix:uid", u.uid(), LinkOption.NOFOLLOW_LINKS);
      Files.setAttribute(p, "unix:gid", u.gid(), LinkOption.NOFOLLOW_LINKS);
    }
    Files.setPosixFilePermissions(dir.payload(), PosixFilePermissions.fromString("rw-r--r--"));
    Set<PosixFilePermission> traverseOnly = PosixFilePermissions.fromString("rwx--x--x");
    Files.setPosixFilePermissions(dir.root(), traverseOnly);
    Files.setPosixFilePermissions(dir.root().getParent(), traverseOnly);
  }

  private static String[] fieldsAfterName(String stat) {
    int close = stat.lastIndexOf(')');
    if (close < 0 || close + 2 >= stat.length()) {
      return null;
    }
    String[] f = stat.substring(close + 2).split(" ");
    return f.length > 3 ? f : null;
  }

  @Override
  public JobProcess start(Spec spec) throws IOException {
    ProcessBuilder builder =
        new ProcessBuilder(jobArgv(spec.command()))
            .directory(spec.workDir().toFile())
            .redirectInput(DEV_NULL);
    Map<String, String> env = builder.environment();
    env.clear();
    env.putAll(spec.environment());
    env.put(SESSION_VARIABLE, spec.sessionFile().toString());
    user.ifPresent(u -> env.put("USER", u.name()));
    Process process = builder.start();
    Subreaper.started(process);
    // The shell records the start time itself; -1 only where it has not yet when a kill comes.
    return new SessionProcess(process, new JobSession(process.pid(), -1));
  }

  /** A program started through {@code setsid}, with its session. */
  private static final class SessionProcess implements JobProcess {
    private final Process process;
    private final JobSession session;

    SessionProcess(Process process, JobSession session) {
      this.process = process;
      this.session = session;
    }

    @Override
    public long pid() {
      return process.pid();
    }

    @Override
    public InputStream stdout() {
      return process.getInputStream();
    }

    @Override
    public InputStream stderr() {
      return process.getErrorStream();
    }

    @Override
    public boolean awaitExit(Duration max) throws InterruptedException {
      return process.waitFor(Math.max(0, max.toNanos()), TimeUnit.NANOSECONDS);
    }

    @Override
    public ProgramExit exit() {
      return ProgramExit.fromExitValue(process.exitValue());
    }

    @Override
    public int terminate() {
      return JobSession.signal(members(), false);
    }

    @Override
    public int kill() {
      return JobSession.signal(members(), true);
    }

    @Override
    public int remaining() {
      return members().size();
    }

    /**
     * The session's processes, plus the program and its descendants: before {@code setsid()} has
     * run, the program is still in the worker's session, and a descendant that left the session is
     * still found while the program lives. Plus, where the worker is a child subreaper, every
     * orphan it adopted and their descendants: a process that left the session and lost its parent
     * ({@code setsid cmd &}, a double-forked daemon) is the worker's child now, and it belongs to
     * this job, the only one the worker runs.
     */
    private List<ProcessHandle> members() {
      List<ProcessHandle> adopted = Subreaper.adopted();
      if (!process.isAlive()) {
        // Its children were reparented when it exited: the session and the adoptions find them now.
        return session.members(adopted);
      }
      ProcessHandle self = process.toHandle();
      List<ProcessHandle> known =
          Stream.concat(Stream.concat(Stream.of(self), self.descendants()), adopted.stream())
              .toList();
      return session.members(known);
    }
  }
}
