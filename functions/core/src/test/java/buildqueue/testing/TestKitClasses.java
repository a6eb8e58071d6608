package buildqueue.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;

/**
 * The classes of the test kit (this test-jar: the in-process platform with its fault switches, the
 * harness, the fault simulation), as jar entry names, so that a packaging test can show that a
 * production jar holds none of them. Read from wherever this class was loaded (the test-classes
 * folder in the reactor, the test-jar elsewhere), so a double added later is checked too.
 */
public final class TestKitClasses {
  private TestKitClasses() {}

  /**
   * Entry names such as {@code buildqueue/testing/InProcessPlatform.class}, nested classes
   * included.
   */
  public static List<String> entries() {
    try {
      Path source =
          Path.of(TestKitClasses.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(source)) {
        try (Stream<Path> files = Files.walk(source)) {
          return files
              .filter(f -> f.toString().endsWith(".class"))
              .map(f -> source.relativize(f).toString().replace('\\', '/'))
              .sorted()
              .toList();
        }
      }
      try (JarFile jar = new JarFile(source.toFile())) {
        return jar.stream()
            .map(ZipEntry::getName)
            .filter(n -> n.endsWith(".class"))
            .sorted()
            .toList();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The doubles named in the issue that took them out of the production jars, by name: checked on
   * their own too, so that the check does not depend on where this class was loaded from.
   */
  public static final List<String> NAMED_DOUBLES =
      List.of(
          "buildqueue/testing/InProcessPlatform.class",
          "buildqueue/platform/InProcessPlatform.class",
          "buildqueue/db/CheckedDatabase.class",
          "buildqueue/faults/FaultyPlatform.class",
          "buildqueue/testing/ManualPlatform.class",
          "buildqueue/testing/RecordingJobContext.class");

  /** Where the test kit's packages are: nothing of a production jar may be under them. */
  public static final List<String> KIT_PACKAGES =
      List.of("buildqueue/testing/", "buildqueue/faults/");

  /**
   * The entries of a jar that belong to the test kit: a named double, any class of the kit as
   * loaded now, or anything under its packages. Empty for a production jar.
   */
  public static Set<String> doublesIn(Collection<String> jarEntries) {
    Set<String> kit = new TreeSet<>(NAMED_DOUBLES);
    kit.addAll(entries());
    Set<String> found = new TreeSet<>();
    for (String e : jarEntries) {
      if (kit.contains(e) || KIT_PACKAGES.stream().anyMatch(e::startsWith)) {
        found.add(e);
      }
    }
    return found;
  }
}
