package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.AwsSettings;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.artifacts.S3ArtifactStore;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The wiring gives a part the S3 artifact store on the bucket its settings name, or none. */
class ArtifactStoreWiringTest {
  private static Map<String, String> tickEnv() {
    Map<String, String> env = new HashMap<>();
    env.put(AwsSettings.AWS_REGION, "eu-west-1");
    env.put(AwsSettings.DB_CLUSTER_ARN, "arn:aws:rds:eu-west-1:111122223333:cluster:buildqueue");
    env.put(
        AwsSettings.DB_SECRET_ARN,
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:bq-AbCdEf");
    env.put(AwsSettings.ECS_CLUSTER, "buildqueue-workers");
    env.put(AwsSettings.TASK_DEFINITION, "buildqueue-worker");
    env.put(AwsSettings.SUBNETS, "subnet-1");
    env.put(AwsSettings.KINDS_FILE, AwsSettings.ENQUEUE_KINDS_FILE);
    return env;
  }

  @Test
  void without_a_bucket_there_is_no_artifact_store_and_with_one_it_is_s3_on_that_bucket() {
    Map<String, String> none = tickEnv();
    Map<String, String> bucket = tickEnv();
    bucket.put(AwsSettings.ARTIFACTS_BUCKET, "stack-artifactsbucket-1a2b");

    assertThat(AwsServices.artifactStore(AwsSettings.load(Component.TICK, none::get))).isEmpty();
    assertThat(AwsServices.artifactStore(AwsSettings.load(Component.TICK, bucket::get)))
        .get()
        .isInstanceOfSatisfying(
            S3ArtifactStore.class,
            s -> assertThat(s.bucket()).isEqualTo("stack-artifactsbucket-1a2b"));
  }
}
