package buildqueue.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The check the packaging tests run on their jars bites: it finds a double wherever it is put. */
class TestKitClassesTest {
  private static final List<String> PRODUCTION =
      List.of(
          "buildqueue/core/BuildQueue.class",
          "buildqueue/worker/WorkerLoop.class",
          "buildqueue/worker/WorkerLoop$Listener.class",
          "buildqueue/platform/WorkerPlatform.class",
          "buildqueue/platform/ForwardingWorkerPlatform.class");

  @Test
  void the_kit_as_loaded_holds_the_in_process_platform_and_its_fault_switches() {
    assertThat(TestKitClasses.entries())
        .contains(
            "buildqueue/testing/InProcessPlatform.class",
            "buildqueue/testing/InProcessPlatform$LaunchPlan.class",
            "buildqueue/faults/FaultyPlatform.class");
  }

  @Test
  void production_classes_alone_hold_no_double() {
    assertThat(TestKitClasses.doublesIn(PRODUCTION)).isEmpty();
  }

  @Test
  void the_in_process_platform_is_found_in_its_old_package_and_in_the_kit() {
    for (String planted :
        List.of(
            "buildqueue/platform/InProcessPlatform.class",
            "buildqueue/testing/InProcessPlatform$Task.class",
            "buildqueue/faults/Simulation.class")) {
      List<String> jar = new java.util.ArrayList<>(PRODUCTION);
      jar.add(planted);

      assertThat(TestKitClasses.doublesIn(jar)).as(planted).containsExactly(planted);
    }
  }
}
