package buildqueue.aws.ecs;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.platform.LaunchOutcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.ecs.model.AccessDeniedException;
import software.amazon.awssdk.services.ecs.model.ClientException;
import software.amazon.awssdk.services.ecs.model.EcsException;
import software.amazon.awssdk.services.ecs.model.InvalidParameterException;

/**
 * How each RunTask refusal is classified, on the SDK's own exception types: the refusals a deploy
 * window or a fresh account causes are retryable launch failures whose reason names the cause and
 * the fix; configuration errors stay final.
 */
class RunTaskOutcomesTest {
  /** As IAM words it for a Lambda's role (pulumi/pulumi#6725, LBHackney-IT/Data-Platform#1818). */
  static final String DENIED =
      "User: arn:aws:sts::111122223333:assumed-role/buildqueue-tick-role/buildqueue-tick"
          + " is not authorized to perform: ecs:RunTask on resource:"
          + " arn:aws:ecs:eu-west-1:111122223333:task-definition/buildqueue-worker:7"
          + " because no identity-based policy allows the ecs:RunTask action";

  static final String NO_ROLE =
      "Unable to assume the service linked role. Please verify that the ECS service linked role exists.";

  static SdkException error(EcsException.Builder builder, String code, String message) {
    return builder
        .statusCode(400)
        .message(message)
        .awsErrorDetails(
            AwsErrorDetails.builder()
                .errorCode(code)
                .errorMessage(message)
                .serviceName("Ecs")
                .build())
        .build();
  }

  static LaunchOutcome.NotStarted notStarted(LaunchOutcome outcome) {
    assertThat(outcome).isInstanceOf(LaunchOutcome.NotStarted.class);
    return (LaunchOutcome.NotStarted) outcome;
  }

  @Test
  void access_denied_is_a_retryable_not_started_naming_iam_and_the_policy_it_needs() {
    LaunchOutcome.NotStarted n =
        notStarted(
            RunTaskOutcomes.of(
                error(AccessDeniedException.builder(), "AccessDeniedException", DENIED)));

    assertThat(n.retryable()).isTrue();
    assertThat(n.beforeToken()).as("says nothing of an earlier call with the same token").isTrue();
    assertThat(n.reason())
        .contains("AccessDeniedException")
        .contains("not authorized to perform: ecs:RunTask")
        .contains("IAM denied the call")
        .contains("ecs:RunTask on task-definition/<family>:*")
        .hasSizeLessThanOrEqualTo(RunTaskOutcomes.REASON_LIMIT);
  }

  @Test
  void access_denied_for_pass_role_is_retryable_too() {
    LaunchOutcome.NotStarted n =
        notStarted(
            RunTaskOutcomes.of(
                error(
                    AccessDeniedException.builder(),
                    "AccessDeniedException",
                    "User: arn:aws:sts::111122223333:assumed-role/r/f is not authorized to perform:"
                        + " iam:PassRole on resource: arn:aws:iam::111122223333:role/buildqueue-worker-task")));

    assertThat(n.retryable()).isTrue();
    assertThat(n.beforeToken()).as("says nothing of an earlier call with the same token").isTrue();
    assertThat(n.reason()).contains("iam:PassRole").contains("iam:PassRole on the task's roles");
  }

  @ParameterizedTest
  @CsvSource({"InvalidParameterException", "ClientException"})
  void an_inactive_task_definition_is_a_retryable_not_started_naming_the_deregistered_revision(
      String code) {
    EcsException.Builder b =
        code.equals("ClientException")
            ? ClientException.builder()
            : InvalidParameterException.builder();

    LaunchOutcome.NotStarted n =
        notStarted(RunTaskOutcomes.of(error(b, code, "TaskDefinition is inactive")));

    assertThat(n.retryable()).isTrue();
    assertThat(n.beforeToken()).as("says nothing of an earlier call with the same token").isTrue();
    assertThat(n.reason())
        .contains(code + ": TaskDefinition is inactive")
        .contains("deregistered by a deploy")
        .contains("set BUILDQUEUE_TASK_DEFINITION to the family");
  }

  @Test
  void
      a_missing_service_linked_role_is_a_retryable_not_started_naming_the_command_that_creates_it() {
    LaunchOutcome.NotStarted n =
        notStarted(
            RunTaskOutcomes.of(
                error(InvalidParameterException.builder(), "InvalidParameterException", NO_ROLE)));

    assertThat(n.retryable()).isTrue();
    assertThat(n.beforeToken()).as("says nothing of an earlier call with the same token").isTrue();
    assertThat(n.reason())
        .contains(NO_ROLE)
        .contains("aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com");
  }

  @ParameterizedTest
  @CsvSource({
    "InvalidParameterException, 'Error retrieving subnet information for [subnet-0bad]: The subnet ID ''subnet-0bad'' does not exist (ErrorCode: InvalidSubnetID.NotFound)'",
    "InvalidParameterException, 'Override for container named app is not a container in the TaskDefinition.'",
    "ClientException, 'TaskDefinition not found.'",
    "ClientException, 'Unable to assume role and validate the specified executionRoleArn.'"
  })
  void a_configuration_error_stays_final(String code, String message) {
    EcsException.Builder b =
        code.equals("ClientException")
            ? ClientException.builder()
            : InvalidParameterException.builder();

    LaunchOutcome.NotStarted n = notStarted(RunTaskOutcomes.of(error(b, code, message)));

    assertThat(n.retryable()).isFalse();
    assertThat(n.beforeToken()).isFalse();
    assertThat(n.reason()).isEqualTo("ECS refused RunTask: " + code + ": " + message);
  }

  @Test
  void a_long_denial_is_cut_in_what_ecs_said_never_in_the_fix() {
    LaunchOutcome.NotStarted n =
        notStarted(
            RunTaskOutcomes.of(
                error(
                    AccessDeniedException.builder(),
                    "AccessDeniedException",
                    DENIED + " ".repeat(10) + "x".repeat(600))));

    assertThat(n.reason())
        .hasSize(RunTaskOutcomes.REASON_LIMIT)
        .endsWith("…")
        .contains("iam:PassRole on the task's roles");
  }
}
