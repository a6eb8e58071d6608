package buildqueue.bench.coldstart;

import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.rdsdata.RdsDataClient;

/**
 * What the choice of HTTP client costs a cold start: in a fresh JVM, builds a Data API client on
 * the named SDK HTTP client and sends one statement (to the Data API fake, through {@code
 * AWS_ENDPOINT_URL_RDS_DATA}), then prints {@code HANDLED} through {@link ColdStartLaunch}. The
 * client class is looked up by name so that each run loads only the client it measures.
 *
 * <pre>java -cp buildqueue-aws.jar:launcher[:apache jars] HttpClientProbe CLIENT_CLASS</pre>
 */
public final class HttpClientProbe {
  private HttpClientProbe() {}

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    SdkHttpClient http = (SdkHttpClient) Class.forName(args[0]).getMethod("create").invoke(null);
    try (RdsDataClient client =
        RdsDataClient.builder()
            .region(Region.of(System.getenv("AWS_REGION")))
            .httpClient(http)
            .build()) {
      long t1 = System.nanoTime();
      client.executeStatement(
          r ->
              r.resourceArn(System.getenv("BUILDQUEUE_DB_CLUSTER_ARN"))
                  .secretArn(System.getenv("BUILDQUEUE_DB_SECRET_ARN"))
                  .database(System.getenv("BUILDQUEUE_DB_NAME"))
                  .sql("select 1"));
      ColdStartLaunch.handled(t0, t1, System.nanoTime());
    }
  }
}
