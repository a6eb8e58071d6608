package buildqueue.bench;

import buildqueue.aws.fake.DataApiFake;
import buildqueue.aws.fake.FakeEcs;
import buildqueue.aws.fake.SecretsManagerFake;
import buildqueue.aws.testing.EventBridgeFake;
import buildqueue.bench.coldstart.ColdStartLaunch;
import buildqueue.bench.coldstart.HttpClientProbe;
import buildqueue.db.JdbcDatabase;
import buildqueue.db.WorkerRole;
import buildqueue.testing.TestDatabases;
import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Figure 7: a cold start of each Lambda handler from the shaded jar, in a fresh JVM with the Lambda
 * runtime's JIT settings, from process start to the first event handled, with the Data API, ECS,
 * EventBridge and Secrets Manager faked at the wire on localhost (the aws module's fakes) and the
 * database the benchmark's PostgreSQL; against a trivial handler started the same way.
 */
final class ColdStart {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String EMPTY_QUEUE =
      "truncate build_job_event, build_job, build_worker, build_user restart identity cascade";

  /** How a primed case's name ends. */
  static final String PRIMED = ", primed: first event after priming";

  /**
   * A handler and the event it gets; {@code primed}: its SnapStart priming runs after it is built
   * and only the first event is the measure.
   */
  record Case(String name, String handlerClass, Path event, boolean primed) {
    Case(String name, String handlerClass, Path event) {
      this(name, handlerClass, event, false);
    }

    Case primedCase() {
      return new Case(name.replaceFirst(" \\(.*$", "") + PRIMED, handlerClass, event, true);
    }

    List<String> launch(java.net.URI reset) {
      List<String> args =
          new ArrayList<>(List.of(ColdStartLaunch.class.getName(), handlerClass, event.toString()));
      if (primed) {
        args.add("--primed");
        args.add(reset.toString());
      }
      return args;
    }
  }

  /** An HTTP client for the Data API, and the jars it needs beyond the shaded jar. */
  record ClientCase(String name, String clientClass, List<Path> jars) {}

  /** The SDK's default HTTP client and its dependencies: what the shaded jar leaves out. */
  private static final List<String> APACHE_JARS =
      List.of("apache-client-", "httpclient-", "httpcore-", "commons-logging-", "commons-codec-");

  private final BenchPostgres pg;
  private final Path repo;
  private final Path jar;
  private final Path work;

  ColdStart(BenchPostgres pg, Path benchDir) {
    this.pg = pg;
    this.repo = benchDir.toAbsolutePath().getParent();
    this.jar = repo.resolve("functions/aws/target/buildqueue-aws.jar");
    this.work = benchDir.toAbsolutePath().resolve("target/coldstart");
  }

  /** The list of classes the functions' priming loads, in the aws module's sources. */
  Path primedClassList() {
    return repo.resolve(
        "functions/aws/src/main/resources/buildqueue/aws/lambda/primed-classes.txt");
  }

  Path jar() {
    return jar;
  }

  long jarBytes() throws IOException {
    return Files.size(jar);
  }

  int jarEntries() throws IOException {
    try (JarFile f = new JarFile(jar.toFile())) {
      return f.size();
    }
  }

  int jarClasses() throws IOException {
    try (JarFile f = new JarFile(jar.toFile())) {
      return (int) f.stream().filter(e -> e.getName().endsWith(".class")).count();
    }
  }

  /**
   * The HTTP clients figure 7 compares: the one the Lambdas use, and the SDK's default (Apache),
   * found with its dependencies among the benchmark's own jars.
   */
  List<ClientCase> clientCases() throws IOException {
    Path lib =
        Path.of(
                LambdaEventSerializers.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .getPath())
            .getParent();
    List<Path> apache = new ArrayList<>();
    for (String prefix : APACHE_JARS) {
      try (var files = Files.list(lib)) {
        // One version of each (a stale copy of another may sit beside it in target/lib).
        apache.add(
            files
                .filter(f -> f.getFileName().toString().startsWith(prefix))
                .max(java.util.Comparator.naturalOrder())
                .orElseThrow(
                    () ->
                        new IllegalStateException(
                            "no " + prefix + "*.jar in " + lib + " for the Apache client")));
      }
    }
    return List.of(
        new ClientCase(
            "URL-connection client (what the Lambdas use)",
            "software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient",
            List.of()),
        new ClientCase(
            "Apache client (the SDK's default, left out of the jar)",
            "software.amazon.awssdk.http.apache.ApacheHttpClient",
            apache));
  }

  /** Runs every case {@code runs} times, interleaved, and returns the starts by case name. */
  Map<String, List<LambdaJvm.Start>> measure(int runs) throws Exception {
    return measure(runs, null);
  }

  /**
   * As {@link #measure(int)}; first, when {@code classList} is given, records into it the classes
   * the four functions' first events load (their union, in order of first load, from the jar and
   * the JDK), which their priming then loads before a snapshot.
   */
  Map<String, List<LambdaJvm.Start>> measure(int runs, Path classList) throws Exception {
    if (!Files.exists(jar)) {
      throw new IllegalStateException(
          "no shaded jar at "
              + jar
              + "; build it with mvn -B -ntp -pl bench -am package -DskipTests");
    }
    Path launcher = extractLauncher();
    Path serialization =
        Path.of(
            LambdaEventSerializers.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
    String classpath =
        String.join(
            java.io.File.pathSeparator,
            jar.toString(),
            launcher.toString(),
            serialization.toString());

    String database = pg.createQueueDatabase("bq_cold");
    HttpServer cfn =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    List<String> refused = new java.util.concurrent.CopyOnWriteArrayList<>();
    cfn.createContext(
        "/",
        exchange -> {
          String answer =
              new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
          if (!answer.contains("\"Status\":\"SUCCESS\"")) {
            refused.add(answer);
          }
          exchange.sendResponseHeaders(200, -1);
          exchange.close();
        });
    // A primed case's launcher handles its event twice; between the two it asks for the queue back.
    JdbcDatabase[] queue = new JdbcDatabase[1];
    cfn.createContext(
        "/reset-queue",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          queue[0].update(EMPTY_QUEUE);
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    cfn.start();
    java.net.URI reset =
        java.net.URI.create("http://127.0.0.1:" + cfn.getAddress().getPort() + "/reset-queue");
    try (HikariDataSource ds = pg.pool(database, 4);
        DataApiFake dataApi = DataApiFake.start().serve(database, ds);
        FakeEcs ecs = FakeEcs.start();
        EventBridgeFake eventBridge = new EventBridgeFake();
        SecretsManagerFake secrets =
            SecretsManagerFake.start()
                .put(
                    DataApiFake.WORKER_SECRET_ARN,
                    "{\"username\": \""
                        + WorkerRole.NAME
                        + "\", \"password\": \""
                        + TestDatabases.WORKER_PASSWORD
                        + "\"}")) {
      Map<String, String> env = new LinkedHashMap<>();
      env.put("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
      env.put("AWS_REGION", DataApiFake.REGION);
      env.put("AWS_ACCESS_KEY_ID", "AKIDCOLDSTART");
      env.put("AWS_SECRET_ACCESS_KEY", "cold-start-not-a-secret");
      env.put("AWS_ENDPOINT_URL_RDS_DATA", dataApi.endpoint().toString());
      env.put("AWS_ENDPOINT_URL_ECS", ecs.endpoint().toString());
      env.put("AWS_ENDPOINT_URL_EVENTBRIDGE", eventBridge.endpoint().toString());
      env.put("AWS_ENDPOINT_URL_SECRETS_MANAGER", secrets.endpoint().toString());
      env.put("AWS_LAMBDA_FUNCTION_NAME", "buildqueue-cold-start");
      env.put("BUILDQUEUE_DB_CLUSTER_ARN", DataApiFake.RESOURCE_ARN);
      env.put("BUILDQUEUE_DB_SECRET_ARN", DataApiFake.SECRET_ARN);
      env.put("BUILDQUEUE_WORKER_DB_SECRET_ARN", DataApiFake.WORKER_SECRET_ARN);
      env.put("BUILDQUEUE_DB_NAME", database);
      env.put("BUILDQUEUE_ECS_CLUSTER", "buildqueue");
      env.put("BUILDQUEUE_TASK_DEFINITION", FakeEcs.TASK_DEFINITION);
      env.put("BUILDQUEUE_SUBNETS", "subnet-0a1b2c3d");
      env.put("BUILDQUEUE_CONTAINER_NAME", FakeEcs.CONTAINER);
      env.put("BUILDQUEUE_KINDS_FILE", repo.resolve("infra/kinds/kinds.json").toString());

      List<Case> cases = cases(cfn.getAddress().getPort());
      List<ClientCase> clients = clientCases();
      JdbcDatabase db = new JdbcDatabase(ds);
      queue[0] = db;
      if (classList != null) {
        recordClasses(classpath, env, cases, db, classList);
      }
      Map<String, List<LambdaJvm.Start>> out = new LinkedHashMap<>();
      for (int i = 0; i < runs; i++) {
        for (Case c : cases) {
          // Every start sees the same queue: empty, so the enqueue dispatches and calls RunTask.
          db.update(EMPTY_QUEUE);
          out.computeIfAbsent(c.name(), k -> new ArrayList<>())
              .add(LambdaJvm.start(classpath, env, c.name(), List.of(), c.launch(reset)));
        }
        for (ClientCase c : clients) {
          List<String> cp = new ArrayList<>(List.of(jar.toString(), launcher.toString()));
          c.jars().forEach(j -> cp.add(j.toString()));
          out.computeIfAbsent(c.name(), k -> new ArrayList<>())
              .add(
                  LambdaJvm.start(
                      String.join(java.io.File.pathSeparator, cp),
                      env,
                      c.name(),
                      List.of(),
                      List.of(HttpClientProbe.class.getName(), c.clientClass())));
        }
      }
      if (!refused.isEmpty()) {
        // A failed migration answers fast; its time would not be the deploy's.
        throw new IllegalStateException(
            "MigrateFunction answered CloudFormation without success: " + refused.get(0));
      }
      return out;
    } finally {
      cfn.stop(0);
      pg.drop(database);
    }
  }

  private List<Case> cases(int cfnPort) throws IOException {
    Files.createDirectories(work);
    Path events = repo.resolve("infra/events");
    ObjectNode cfnEvent =
        (ObjectNode) JSON.readTree(events.resolve("cloudformation-create.json").toFile());
    cfnEvent.put("ResponseURL", "http://127.0.0.1:" + cfnPort + "/cfn-response");
    Path cfn = work.resolve("cloudformation-create.json");
    JSON.writeValue(cfn.toFile(), cfnEvent);
    Path tick = work.resolve("scheduled.json");
    Files.writeString(
        tick,
        """
        {"version": "0", "id": "5e7e4b8e-0000-4000-8000-000000000001", "detail-type": "Scheduled Event",
         "source": "aws.events", "account": "111122223333", "time": "2026-12-01T10:00:00Z",
         "region": "eu-west-1", "resources": ["arn:aws:events:eu-west-1:111122223333:rule/buildqueue-tick"],
         "detail": {}}
        """);
    List<Case> functions =
        List.of(
            new Case(
                "EnqueueFunction (POST /jobs: enqueue, dispatch, RunTask)",
                "buildqueue.aws.lambda.EnqueueFunction",
                events.resolve("api-gateway-post-jobs.json")),
            new Case("TickFunction (scheduled tick)", "buildqueue.aws.lambda.TickFunction", tick),
            new Case(
                "TaskStateChangeFunction (ECS STOPPED event)",
                "buildqueue.aws.lambda.TaskStateChangeFunction",
                events.resolve("ecs-task-failed-to-start.json")),
            new Case(
                "MigrateFunction (CloudFormation create, schema up to date)",
                "buildqueue.aws.lambda.MigrateFunction",
                cfn));
    List<Case> all = new ArrayList<>();
    all.add(
        new Case(
            "trivial handler (reads the event, answers a constant)",
            ColdStartLaunch.Trivial.class.getName(),
            tick));
    all.addAll(functions);
    functions.forEach(f -> all.add(f.primedCase()));
    return all;
  }

  private static final Pattern LOADED = Pattern.compile("\\[class,load\\] (\\S+) source: (.*)$");

  private void recordClasses(
      String classpath, Map<String, String> env, List<Case> cases, JdbcDatabase db, Path out)
      throws IOException, InterruptedException {
    java.util.Set<String> classes = new java.util.LinkedHashSet<>();
    for (Case c : cases) {
      if (c.primed() || !c.handlerClass().startsWith("buildqueue.aws.")) {
        continue;
      }
      Path log = work.resolve("classes-" + c.handlerClass().replaceAll(".*\\.", "") + ".log");
      db.update(EMPTY_QUEUE);
      LambdaJvm.start(
          classpath, env, c.name(), List.of("-Xlog:class+load=info:file=" + log), c.launch(null));
      for (String line : Files.readAllLines(log)) {
        Matcher m = LOADED.matcher(line);
        // From the jar or the JDK; not the launcher's, nor generated classes (lambdas, proxies).
        if (m.find()
            && !m.group(1).startsWith("buildqueue.bench.")
            && !m.group(1).contains("$$")
            && !m.group(1).contains("/")
            && (m.group(2).contains(jar.getFileName().toString())
                || m.group(2).startsWith("jrt:/")
                || m.group(2).startsWith("shared objects file"))) {
          classes.add(m.group(1));
        }
      }
    }
    List<String> lines = new ArrayList<>();
    lines.add(
        "# The classes the four functions' first events load, recorded by the benchmark from the shaded jar");
    lines.add(
        "# (java -jar bench/target/buildqueue-bench.jar --record-primed-classes); Priming loads them before a");
    lines.add(
        "# snapshot, all but those whose names suggest a random generator (Priming.SKIPPED).");
    lines.addAll(classes);
    Files.createDirectories(out.getParent());
    Files.write(out, lines, StandardCharsets.UTF_8);
  }

  /**
   * The launcher's classes, alone in a directory, so the child sees nothing else of the benchmark.
   */
  private Path extractLauncher() throws IOException {
    Path dir = work.resolve("launcher");
    String pkg = ColdStartLaunch.class.getPackageName().replace('.', '/');
    Files.createDirectories(dir.resolve(pkg));
    for (String name :
        List.of(
            "ColdStartLaunch.class", "ColdStartLaunch$Trivial.class", "HttpClientProbe.class")) {
      try (InputStream in = ColdStartLaunch.class.getResourceAsStream("/" + pkg + "/" + name)) {
        if (in == null) {
          throw new IOException(name + " missing from the benchmark jar");
        }
        Files.write(dir.resolve(pkg).resolve(name), in.readAllBytes());
      }
    }
    return dir;
  }
}
