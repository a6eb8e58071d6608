package buildqueue.worker.exec;

/** How a job's program ended. */
public sealed interface ProgramExit {

  /** It exited by itself (or its {@code exit} call) with this code. */
  record Exited(int code) implements ProgramExit {
    @Override
    public String describe() {
      return "exited with code " + code;
    }
  }

  /** A signal ended it. */
  record Signalled(int signal) implements ProgramExit {
    @Override
    public String describe() {
      return "killed by signal " + signal + " (" + signalName(signal) + ")";
    }
  }

  /** For the job's log and its error: "exited with code 3", "killed by signal 9 (SIGKILL)". */
  String describe();

  /**
   * Reads an exit value as the JDK reports it on Linux: the exit code, or 128 plus the signal that
   * ended the process. The JDK gives no way to tell "killed by signal 9" from "exit(137)", so a
   * program that exits with a code above 128 on purpose is reported as killed by that signal, the
   * same reading shells give {@code $?}.
   */
  static ProgramExit fromExitValue(int value) {
    if (value > 128 && value <= 128 + 64) {
      return new Signalled(value - 128);
    }
    return new Exited(value);
  }

  /** Linux signal numbers (x86, ARM and most others share them). */
  static String signalName(int signal) {
    String[] names = {
      null,
      "SIGHUP",
      "SIGINT",
      "SIGQUIT",
      "SIGILL",
      "SIGTRAP",
      "SIGABRT",
      "SIGBUS",
      "SIGFPE",
      "SIGKILL",
      "SIGUSR1",
      "SIGSEGV",
      "SIGUSR2",
      "SIGPIPE",
      "SIGALRM",
      "SIGTERM",
      "SIGSTKFLT",
      "SIGCHLD",
      "SIGCONT",
      "SIGSTOP",
      "SIGTSTP",
      "SIGTTIN",
      "SIGTTOU",
      "SIGURG",
      "SIGXCPU",
      "SIGXFSZ",
      "SIGVTALRM",
      "SIGPROF",
      "SIGWINCH",
      "SIGIO",
      "SIGPWR",
      "SIGSYS"
    };
    if (signal > 0 && signal < names.length) {
      return names[signal];
    }
    if (signal >= 34 && signal <= 64) {
      return "SIGRTMIN+" + (signal - 34);
    }
    return "signal " + signal;
  }
}
