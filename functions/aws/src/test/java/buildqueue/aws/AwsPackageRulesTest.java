package buildqueue.aws;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import buildqueue.testing.MainClasses;
import com.tngtech.archunit.core.domain.JavaClasses;
import org.junit.jupiter.api.Test;

/**
 * The package rules of this module's main code (docs/architecture.md §9; core's are {@code
 * buildqueue.PackageRulesTest}): one adapter never imports the other, and the AWS adapters are
 * wired by the entry points, never the other way.
 */
class AwsPackageRulesTest {
  private static final JavaClasses MAIN = MainClasses.of(AwsSettings.class);

  @Test
  void the_aws_adapter_never_imports_the_local_one() {
    noClasses()
        .that()
        .resideInAPackage("buildqueue.aws..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("buildqueue.local..")
        .check(MAIN);
  }

  /**
   * The Data API, ECS, EventBridge, S3 artifacts, metrics and webhook-start adapters; the Lambdas
   * and the Fargate worker wire them.
   */
  @Test
  void the_aws_adapters_never_import_the_entry_points() {
    noClasses()
        .that()
        .resideInAnyPackage(
            "buildqueue.aws.artifacts..",
            "buildqueue.aws.db..",
            "buildqueue.aws.ecs..",
            "buildqueue.aws.events..",
            "buildqueue.aws.metrics..",
            "buildqueue.aws.webhooks..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("buildqueue.aws.lambda..", "buildqueue.aws.worker..")
        .check(MAIN);
  }
}
