package buildqueue.aws.lambda;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.artifacts.S3ArtifactStore;
import buildqueue.aws.db.DataApiDatabase;
import buildqueue.aws.ecs.EcsClients;
import buildqueue.aws.ecs.EcsWorkerPlatform;
import buildqueue.aws.webhooks.WebhookDeliveryStarter;
import buildqueue.core.Capacities;
import buildqueue.core.QueueClock;
import buildqueue.core.WebhookDeliveries;
import buildqueue.core.WebhookHttp;
import buildqueue.db.Database;
import buildqueue.db.JdbcDatabase;
import buildqueue.kinds.KindCatalogue;
import buildqueue.kinds.KindRegistry;
import buildqueue.platform.WorkerPlatform;
import java.time.Duration;
import java.util.Optional;
import org.postgresql.ds.PGSimpleDataSource;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.eventbridge.EventBridgeClient;

/**
 * Builds the production wiring from the environment: the RDS Data API database, the ECS platform
 * and the EventBridge client, all on the URL-connection HTTP client (no extra threads or native
 * code to restore after a SnapStart snapshot). Called lazily, once per container.
 */
public final class AwsServices {
  private AwsServices() {}

  public static QueueServices queueServices(Component component) {
    AwsSettings settings = AwsSettings.fromEnvironment(component);
    // The API checks submissions against the catalogue; the API, the tick and the stop handler
    // launch each worker on the capacity its job's kind names, else the stack's DefaultCapacity.
    Optional<KindCatalogue> catalogue =
        component.needsKinds() ? Optional.of(settings.kindCatalogue()) : Optional.empty();
    KindRegistry kinds = catalogue.map(KindCatalogue::registry).orElse(KindRegistry.builtIn());
    QueueServices services =
        new QueueServices(
            component,
            database(settings),
            platform(settings),
            eventBridge(settings.region()),
            settings.eventBus(),
            settings.queue(),
            QueueClock.DATABASE,
            settings.metricsNamespace(),
            System.out,
            kinds,
            settings.tickRule().orElse(null));
    catalogue.ifPresent(
        c ->
            services
                .queue()
                .useCapacities(new Capacities(settings.defaultCapacity(), c.capacities())));
    // Artifacts: the API lists them and presigns downloads, the tick sweeps abandoned ones
    // (docs/architecture.md §4.10).
    artifactStore(settings).ifPresent(services::withArtifacts);
    // Webhooks: the tick starts a delivery pass when its survey finds deliveries due (§4.11).
    settings
        .webhookFunction()
        .ifPresent(
            f -> services.withWebhookStarter(WebhookDeliveryStarter.create(settings.region(), f)));
    return services;
  }

  /**
   * The webhook delivery function's wiring: the Data API database and the deliverer with the
   * production transport ({@link WebhookHttp}, private targets refused: a Lambda outside any VPC
   * reaches only public addresses, and the deliverer refuses the others before sending a byte).
   */
  public static WebhookServices webhookServices(Component component) {
    AwsSettings settings = AwsSettings.fromEnvironment(component);
    return webhookServices(database(settings), settings.metricsNamespace(), System.out);
  }

  /** As {@link #webhookServices(Component)}, on a given database: the production transport. */
  static WebhookServices webhookServices(
      Database db, String metricsNamespace, java.io.PrintStream metricsOut) {
    return new WebhookServices(
        db,
        new WebhookDeliveries(db, QueueClock.DATABASE, new WebhookHttp(false)),
        metricsNamespace,
        metricsOut);
  }

  /** The queue's database: the Data API, or (a self-hosted worker) JDBC without a pool. */
  public static Database database(AwsSettings settings) {
    if (settings.database() instanceof AwsSettings.Jdbc jdbc) {
      // One statement at a time, a few per job: a pool would only add threads.
      PGSimpleDataSource ds = new PGSimpleDataSource();
      ds.setURL(jdbc.url());
      return new JdbcDatabase(ds);
    }
    return DataApiDatabase.create(settings.dataApiSettings());
  }

  /**
   * The database schema migrations run on: over the Data API, every statement is sent with {@code
   * continueAfterTimeout} so that a long DDL is never cut off mid-way.
   */
  public static Database forSchemaChanges(Database database) {
    return database instanceof DataApiDatabase dataApi
        ? dataApi.continuingAfterTimeout()
        : database;
  }

  static WorkerPlatform platform(AwsSettings settings) {
    return new EcsWorkerPlatform(
        EcsClients.create(EcsClients.Settings.defaults(settings.region())), settings.ecs());
  }

  /**
   * The artifact store the settings name: S3 on {@link AwsSettings#artifactsBucket()} in the part's
   * region, with its role's credentials; empty when no bucket is set (no artifact store). What each
   * part may do with it is its role's: the worker only puts, the API also presigns downloads, the
   * API, the tick and the stop handler remove (template.yaml, ArtifactsBucket).
   */
  public static Optional<ArtifactStore> artifactStore(AwsSettings settings) {
    return settings
        .artifactsBucket()
        .map(bucket -> S3ArtifactStore.create(settings.region(), bucket));
  }

  /** For the Migrate function only: the worker role's secret. */
  static software.amazon.awssdk.services.secretsmanager.SecretsManagerClient secretsManager(
      String region) {
    return software.amazon.awssdk.services.secretsmanager.SecretsManagerClient.builder()
        .region(software.amazon.awssdk.regions.Region.of(region))
        .httpClientBuilder(
            software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient.builder())
        .build();
  }

  static EventBridgeClient eventBridge(String region) {
    return EventBridgeClient.builder()
        .region(Region.of(region))
        .httpClient(
            UrlConnectionHttpClient.builder()
                .connectionTimeout(Duration.ofSeconds(5))
                .socketTimeout(Duration.ofSeconds(10))
                .build())
        .overrideConfiguration(c -> c.apiCallTimeout(Duration.ofSeconds(20)))
        .build();
  }
}
