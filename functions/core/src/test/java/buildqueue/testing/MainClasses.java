package buildqueue.testing;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;

/**
 * A module's main classes, for its package rules ({@code buildqueue.PackageRulesTest}): read from
 * wherever {@code anyMainClass} was loaded (the classes folder in the reactor, the jar elsewhere),
 * so a class added later is checked too and no test class is.
 */
public final class MainClasses {
  private MainClasses() {}

  public static JavaClasses of(Class<?> anyMainClass) {
    return new ClassFileImporter()
        .importUrl(anyMainClass.getProtectionDomain().getCodeSource().getLocation());
  }
}
