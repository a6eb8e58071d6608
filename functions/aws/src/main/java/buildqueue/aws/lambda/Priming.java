package buildqueue.aws.lambda;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;
import org.crac.Context;
import org.crac.Core;
import org.crac.Resource;

/**
 * SnapStart priming: one CRaC resource per function, registered when Lambda builds the handler
 * (during init), whose {@link #beforeCheckpoint} does before the snapshot what the first event
 * would otherwise pay for after every restore: it builds the function's services (the SDK clients,
 * the queue, the HTTP API and, for the API, the kind catalogue with its schemas), loads the classes
 * a first event loads ({@value #CLASS_LIST}, recorded from real first events by the benchmark),
 * runs the function's own local code on a sample input, and rehearses the SDK calls its first event
 * makes against a loopback server in the JVM ({@link Rehearsal}); the local code and the calls
 * {@link #ROUNDS} times each (25), so that the snapshot holds them compiled.
 *
 * <p>What it never does, as AWS's SnapStart guidance asks: call AWS or the database (the snapshot
 * is taken at deploy time, and a connection in it would be stale after restore); make a worker
 * token or any random value (every dispatch makes its token inside a handler, after restore; the
 * classes whose initialisation seeds a random generator are not loaded, see {@link #SKIPPED}). The
 * one kind of generator priming does make is a TLS context's {@code SecureRandom} (the SDK
 * clients', the JDK HTTP client's): on Linux NativePRNG, which mixes every output with bytes read
 * from {@code /dev/urandom} at the time, so restored copies do not share its output. {@link
 * #afterRestore} has nothing to re-establish: priming opened no connection but to the rehearsal's
 * loopback server, stopped before the snapshot, with clients it then discarded; the function's own
 * clients are unused, and credentials are read on the first call.
 *
 * <p>A failure here is logged and swallowed: a snapshot without priming is slower, not wrong, and a
 * hook that throws would fail the deploy.
 */
public final class Priming implements Resource {
  /**
   * The classes first events load, one a line, from the shaded jar; regenerate with the benchmark.
   */
  static final String CLASS_LIST = "/buildqueue/aws/lambda/primed-classes.txt";

  /**
   * Classes never loaded by priming, although a first event loads them: their static initialisers
   * make random generators (UUID's holder of a SecureRandom; the SDK's jitter), which a snapshot
   * would then share between every environment restored from it.
   */
  static final Pattern SKIPPED =
      Pattern.compile("(?i).*(random|uuid|seed|prng|drbg|nonce|jitter).*");

  /**
   * How many times priming runs each path: a path run once stays interpreted in the snapshot, and
   * the first event after a restore runs it at the interpreter's pace; past the JIT's thresholds
   * (C1's, at the Lambda runtime's flags) the snapshot holds it compiled. 25 unless the system
   * property {@code buildqueue.primingRounds} says otherwise: the module's tests set 2, as what
   * they check (what priming calls, sends and leaves behind) holds for any number of rounds, and 25
   * rounds of every function's paths cost them over a minute.
   */
  static final int ROUNDS = Integer.getInteger("buildqueue.primingRounds", 25);

  private static final System.Logger LOG = System.getLogger(Priming.class.getName());

  /** Strong references: the runtime's CRaC context holds its resources weakly. */
  private static final List<Priming> REGISTERED = new CopyOnWriteArrayList<>();

  private final String function;
  private final Runnable prime;
  private volatile long primedMillis = -1;

  private Priming(String function, Runnable prime) {
    this.function = function;
    this.prime = prime;
  }

  /**
   * Registers {@code prime} as {@code function}'s priming with the global CRaC context, once per
   * function however many handler instances are built.
   */
  static synchronized void register(String function, Runnable prime) {
    if (REGISTERED.stream().anyMatch(p -> p.function.equals(function))) {
      return;
    }
    Priming p = new Priming(function, prime);
    REGISTERED.add(p);
    Core.getGlobalContext().register(p);
  }

  /** The functions whose priming is registered in this JVM. */
  public static List<String> registered() {
    return REGISTERED.stream().map(p -> p.function).toList();
  }

  /**
   * What Lambda does around a snapshot, for a JVM without CRaC (tests, the benchmark): every
   * registered hook's {@code beforeCheckpoint}, then every {@code afterRestore}, in the runtime's
   * orders (reverse registration, then registration).
   */
  public static void checkpointAndRestore() {
    List<Priming> all = List.copyOf(REGISTERED);
    for (int i = all.size() - 1; i >= 0; i--) {
      all.get(i).beforeCheckpoint(null);
    }
    for (Priming p : all) {
      p.afterRestore(null);
    }
  }

  @Override
  public void beforeCheckpoint(Context<? extends Resource> context) {
    long t0 = System.nanoTime();
    try {
      prime.run();
      primedMillis = (System.nanoTime() - t0) / 1_000_000;
      LOG.log(Level.INFO, "{0} primed for the snapshot in {1} ms", function, primedMillis);
    } catch (RuntimeException | LinkageError e) {
      LOG.log(
          Level.WARNING,
          function + " could not be primed; its first event after a restore pays instead",
          e);
    }
  }

  @Override
  public void afterRestore(Context<? extends Resource> context) {
    // Nothing to re-establish (see the class comment); tokens are made per dispatch, after this.
  }

  /**
   * Loads (and initialises) the classes of {@value #CLASS_LIST} that this class loader can find,
   * but none that {@link #SKIPPED} names. Returns how many it loaded.
   */
  static int loadClasses() {
    ClassLoader loader = Priming.class.getClassLoader();
    int loaded = 0;
    try (InputStream in = Priming.class.getResourceAsStream(CLASS_LIST)) {
      if (in == null) {
        LOG.log(
            Level.WARNING,
            "{0} is not in the jar; priming loads no classes from a list",
            CLASS_LIST);
        return 0;
      }
      BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String name = lines.readLine(); name != null; name = lines.readLine()) {
        name = name.strip();
        if (name.isEmpty() || name.startsWith("#") || SKIPPED.matcher(name).matches()) {
          continue;
        }
        try {
          Class.forName(name, true, loader);
          loaded++;
        } catch (ClassNotFoundException | LinkageError stale) {
          // A list from an older jar: the class is gone, or cannot initialise here. Skip it.
        }
      }
    } catch (IOException e) {
      LOG.log(Level.WARNING, "reading " + CLASS_LIST + " failed; priming goes on without it", e);
    }
    return loaded;
  }

  /**
   * Runs {@code calls} on a {@link Rehearsal}, whatever fails: a JVM without the JDK's HTTP server,
   * or an SDK that answers otherwise, leaves the priming without the rehearsal, not without the
   * rest.
   */
  static void rehearse(java.util.function.Consumer<Rehearsal> calls) {
    try (Rehearsal r = Rehearsal.start()) {
      calls.accept(r);
    } catch (RuntimeException | LinkageError e) {
      LOG.log(Level.WARNING, "the SDK calls' rehearsal failed; priming goes on without it", e);
    }
  }

  long primedMillis() {
    return primedMillis;
  }
}
