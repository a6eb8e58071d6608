package buildqueue.worker.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.BuildQueueException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The job user a root worker runs programs as: found in /etc/passwd, never root, never made up. */
class JobUserTest {
  @Test
  void nobody_is_found_with_its_ids() {
    JobUser nobody = JobUser.lookup("nobody");
    assertThat(nobody.uid()).isEqualTo(65534);
    assertThat(nobody.gid()).isEqualTo(65534);
  }

  @Test
  void a_user_that_does_not_exist_is_refused_naming_the_flag() {
    assertThatThrownBy(() -> JobUser.lookup("no-such-buildqueue-user"))
        .isInstanceOf(BuildQueueException.class)
        .hasMessageContaining("no-such-buildqueue-user does not exist")
        .hasMessageContaining("--job-user");
  }

  @Test
  void root_and_what_is_not_a_user_name_are_refused() {
    assertThatThrownBy(() -> JobUser.lookup("root")).hasMessageContaining("uid 0");
    assertThatThrownBy(() -> JobUser.lookup("../etc")).hasMessageContaining("is not a user name");
    assertThatThrownBy(() -> JobUser.lookup("nobody:x")).hasMessageContaining("is not a user name");
  }

  @Test
  void no_variable_means_the_workers_own_user() {
    assertThat(JobUser.fromEnvironment(Map.of())).isEmpty();
    assertThat(JobUser.fromEnvironment(Map.of(JobUser.VARIABLE, "nobody")))
        .map(JobUser::name)
        .contains("nobody");
  }
}
