package buildqueue;

import static com.tngtech.archunit.base.DescribedPredicate.or;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.equivalentTo;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import buildqueue.db.Json;
import buildqueue.testing.MainClasses;
import com.tngtech.archunit.core.domain.JavaClasses;
import org.junit.jupiter.api.Test;

/**
 * The package rules of the main code (docs/architecture.md §9, "packages and their allowed
 * arrows"), read from the compiled classes: a class that imports across a forbidden arrow fails the
 * build here, naming the class and the dependency.
 */
class PackageRulesTest {
  private static final String[] ADAPTERS = {"buildqueue.aws..", "buildqueue.local.."};
  private static final JavaClasses MAIN = MainClasses.of(BuildQueueException.class);

  @Test
  void core_never_imports_the_api_the_worker_the_kinds_or_an_adapter() {
    noClasses()
        .that()
        .resideInAPackage("buildqueue.core..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "buildqueue.api..",
            "buildqueue.worker..",
            "buildqueue.kinds..",
            ADAPTERS[0],
            ADAPTERS[1])
        .check(MAIN);
  }

  /**
   * Of ours, only the root of the exception tree, the database's JSON value and the capacity a kind
   * runs on (a leaf enum of the platform port: the catalogue names it per kind).
   */
  @Test
  void kinds_is_a_leaf_that_imports_nothing_of_ours_but_the_exception_root_and_the_json_value() {
    classes()
        .that()
        .resideInAPackage("buildqueue.kinds..")
        .should()
        .onlyDependOnClassesThat(
            or(
                resideOutsideOfPackage("buildqueue.."),
                resideInAPackage("buildqueue.kinds.."),
                equivalentTo(BuildQueueException.class),
                equivalentTo(Json.class),
                equivalentTo(buildqueue.platform.Capacity.class)))
        .check(MAIN);
  }

  /** The API checks submissions against a {@code kinds.KindRegistry}; it never runs a job. */
  @Test
  void the_api_and_the_worker_never_import_each_other() {
    noClasses()
        .that()
        .resideInAPackage("buildqueue.api..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("buildqueue.worker..")
        .check(MAIN);
    noClasses()
        .that()
        .resideInAPackage("buildqueue.worker..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("buildqueue.api..")
        .check(MAIN);
  }

  /**
   * The ports ({@code db}: {@code Database} and its JDBC adapter; {@code platform}: {@code
   * WorkerPlatform}) lean on nothing of ours above them, nor on each other.
   */
  @Test
  void the_ports_import_neither_each_other_nor_anything_above_them() {
    String[] above = {
      "buildqueue.core..",
      "buildqueue.api..",
      "buildqueue.worker..",
      "buildqueue.kinds..",
      ADAPTERS[0],
      ADAPTERS[1]
    };
    noClasses()
        .that()
        .resideInAPackage("buildqueue.db..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(above)
        .orShould()
        .dependOnClassesThat()
        .resideInAPackage("buildqueue.platform..")
        .check(MAIN);
    noClasses()
        .that()
        .resideInAPackage("buildqueue.platform..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(above)
        .orShould()
        .dependOnClassesThat()
        .resideInAPackage("buildqueue.db..")
        .check(MAIN);
  }

  /** A package and its sub-packages are one slice ({@code worker} with {@code worker.exec}). */
  @Test
  void no_package_depends_on_itself_through_others() {
    slices().matching("buildqueue.(*)..").should().beFreeOfCycles().check(MAIN);
  }
}
