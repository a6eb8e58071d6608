package buildqueue.bench.coldstart;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.amazonaws.services.lambda.runtime.serialization.PojoSerializer;
import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Plays the Lambda runtime for one cold start: runs in a fresh JVM with the shaded jar, builds the
 * handler (and, for a typed handler, the runtime's serializers of its event and answer, as the
 * runtime does when it loads one), deserializes the event as the runtime would, handles it once,
 * serializes the answer, and prints {@code HANDLED} with how long each step took. Loaded on its own
 * (never with the rest of the benchmark), so it may use only the JDK, the Lambda interfaces and the
 * runtime's event serializers.
 *
 * <pre>
 * java -cp buildqueue-aws.jar:launcher:serialization.jar ColdStartLaunch HANDLER EVENT_FILE [--primed [RESET_URL]]
 * </pre>
 *
 * <p>With {@code --primed} it plays a SnapStart snapshot in between: after building the handler it
 * runs the registered priming hooks' {@code beforeCheckpoint} and {@code afterRestore} (through
 * {@value #PRIMING}, as a JVM without CRaC cannot checkpoint), and then times the first event
 * alone: the part a restored snapshot still pays. Given {@code RESET_URL}, it then has the
 * benchmark put the queue back as it was (a POST there) and handles the same event again, warm,
 * which says how much of the first event was the work itself.
 */
public final class ColdStartLaunch {
  private ColdStartLaunch() {}

  /** The functions' priming, reached by name: the launcher compiles against no function class. */
  static final String PRIMING = "buildqueue.aws.lambda.Priming";

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    byte[] event = Files.readAllBytes(Path.of(args[1]));
    Class<?> type = Class.forName(args[0]);
    Object handler = type.getDeclaredConstructor().newInstance();
    // The runtime builds a typed handler's event and answer serializers when it loads the handler,
    // during init (so before a snapshot); only their first use falls in the first event.
    PojoSerializer<Object> in = null;
    PojoSerializer<Object> out = null;
    if (!(handler instanceof RequestStreamHandler)) {
      Method handle = handleRequest(type);
      in = serializer(handle.getParameterTypes()[0], type);
      out = handle.getReturnType() == void.class ? null : serializer(handle.getReturnType(), type);
    }
    boolean primed = args.length > 2 && args[2].equals("--primed");
    if (primed) {
      Class.forName(PRIMING).getMethod("checkpointAndRestore").invoke(null);
    }
    long t1 = System.nanoTime();
    Context context = context();
    handle(handler, in, out, event, context);
    long t2 = System.nanoTime();
    if (primed && args.length > 3) {
      // The same event again on the same queue state, after the first: what is left of the first
      // event once nothing in the JVM is new, so the round trips and the statements alone.
      reset(URI.create(args[3]));
      long w = System.nanoTime();
      handle(handler, in, out, event, context);
      warmMs = (System.nanoTime() - w) / 1_000_000.0;
    }
    handled(t0, t1, t2);
  }

  private static double warmMs = -1;

  private static void handle(
      Object handler,
      PojoSerializer<Object> in,
      PojoSerializer<Object> out,
      byte[] event,
      Context context)
      throws java.io.IOException {
    if (handler instanceof RequestStreamHandler stream) {
      stream.handleRequest(new ByteArrayInputStream(event), new ByteArrayOutputStream(), context);
    } else {
      @SuppressWarnings("unchecked")
      RequestHandler<Object, Object> typed = (RequestHandler<Object, Object>) handler;
      Object answer = typed.handleRequest(in.fromJson(new ByteArrayInputStream(event)), context);
      if (out != null) {
        out.toJson(answer, new ByteArrayOutputStream());
      }
    }
  }

  /** Asks the benchmark to put the queue back as the first event found it. */
  private static void reset(URI url) throws java.io.IOException {
    java.net.HttpURLConnection c = (java.net.HttpURLConnection) url.toURL().openConnection();
    c.setRequestMethod("POST");
    if (c.getResponseCode() != 204) {
      throw new IllegalStateException(
          "the benchmark did not reset the queue: HTTP " + c.getResponseCode());
    }
    c.disconnect();
  }

  /** Prints the line the benchmark waits for (the split of the start, classes loaded) and exits. */
  static void handled(long t0, long t1, long t2) {
    System.out.println(
        "HANDLED construct_ms="
            + (t1 - t0) / 1_000_000.0
            + " handle_ms="
            + (t2 - t1) / 1_000_000.0
            + (warmMs < 0 ? "" : " warm_ms=" + warmMs)
            + " jvm_uptime_ms="
            + ManagementFactory.getRuntimeMXBean().getUptime()
            + " classes="
            + ManagementFactory.getClassLoadingMXBean().getTotalLoadedClassCount());
    System.out.flush();
    System.exit(0);
  }

  private static Method handleRequest(Class<?> handler) {
    for (Method m : handler.getMethods()) {
      if (m.getName().equals("handleRequest")
          && m.getParameterCount() == 2
          && !m.isBridge()
          && m.getParameterTypes()[1] == Context.class) {
        return m;
      }
    }
    throw new IllegalArgumentException(handler + " has no handleRequest(T, Context)");
  }

  @SuppressWarnings("unchecked")
  private static PojoSerializer<Object> serializer(Class<?> of, Class<?> handler) {
    return (PojoSerializer<Object>)
        LambdaEventSerializers.serializerFor(of, handler.getClassLoader());
  }

  private static Context context() {
    return (Context)
        Proxy.newProxyInstance(
            Context.class.getClassLoader(),
            new Class<?>[] {Context.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "getAwsRequestId" -> "cold-start-1";
                  case "getFunctionName" -> "buildqueue-cold-start";
                  case "getFunctionVersion" -> "$LATEST";
                  case "getInvokedFunctionArn" ->
                      "arn:aws:lambda:eu-west-1:111122223333:function:buildqueue-cold-start";
                  case "getRemainingTimeInMillis" -> 30_000;
                  case "getMemoryLimitInMB" -> 1024;
                  case "getLogGroupName", "getLogStreamName" -> "cold-start";
                  case "getLogger" -> null;
                  case "hashCode" -> 1;
                  case "equals" -> proxy == args[0];
                  case "toString" -> "ColdStartContext";
                  default -> null;
                });
  }

  /** The trivial handler the figure compares with: reads the event, answers a constant. */
  public static final class Trivial implements RequestStreamHandler {
    @Override
    public void handleRequest(InputStream input, java.io.OutputStream output, Context context)
        throws java.io.IOException {
      input.readAllBytes();
      output.write("{\"ok\":true}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }
}
