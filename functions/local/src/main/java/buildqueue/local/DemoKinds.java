package buildqueue.local;

import buildqueue.core.QueueConfig;
import buildqueue.kinds.KindCatalogue;
import buildqueue.worker.QueueKindLimits;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The kind {@code serve --demo} adds so a newcomer sees a real build run: {@value #KIND}, a shell
 * script shipped in this jar ({@code render-sample.sh}) that prints a log, reports progress,
 * resumes after an interruption and fails with its own message when asked. The demo writes the
 * script and a catalogue that holds it (beside the operator's own kinds, if {@code --kinds} gave
 * some) into {@code <data-dir>/demo/}, and the server runs from that catalogue like any other.
 */
final class DemoKinds {
  static final String KIND = "render-sample";
  private static final String SCRIPT = "render-sample.sh";
  private static final ObjectMapper JSON = new ObjectMapper();

  private DemoKinds() {}

  /** Where the demo keeps its script and catalogue. */
  static Path directory(Path dataDir) {
    return dataDir.resolve("demo").toAbsolutePath();
  }

  /** The demo's script, a job's program. */
  static Path script(Path dataDir) {
    return directory(dataDir).resolve(SCRIPT);
  }

  /**
   * Writes the sample script and the demo's catalogue; returns the catalogue's path. An operator's
   * catalogue is checked first, so its mistakes are reported against its own file.
   */
  static Path prepare(Path dataDir, Optional<Path> operatorCatalogue, QueueConfig queue) {
    try {
      Path dir = directory(dataDir);
      Files.createDirectories(dir);
      Path script = dir.resolve(SCRIPT);
      try (InputStream in = DemoKinds.class.getResourceAsStream("demo/" + SCRIPT)) {
        if (in == null) {
          throw new IllegalStateException("the demo's " + SCRIPT + " is missing from the jar");
        }
        Files.write(script, in.readAllBytes());
      }
      ObjectNode catalogue = JSON.createObjectNode();
      ObjectNode kinds = catalogue.putObject("kinds");
      if (operatorCatalogue.isPresent()) {
        KindCatalogue.load(operatorCatalogue.get(), QueueKindLimits.of(queue));
        kinds.setAll((ObjectNode) JSON.readTree(operatorCatalogue.get().toFile()).path("kinds"));
      }
      if (!kinds.has(KIND)) {
        kinds.set(
            KIND,
            JSON.readTree(
                """
            {"command": ["sh", "%s"], "timeout": "5m", "cancelGracePeriod": "5s", "retryExitCodes": [75],
             "payloadSchema": {"type": "object", "additionalProperties": false,
               "properties": {"pages": {"type": "integer", "minimum": 1, "maximum": 60},
                              "failAtPage": {"type": "integer", "minimum": 1}}}}
            """
                    .formatted(script.toString().replace("\\", "\\\\").replace("\"", "\\\""))));
      }
      Path file = dir.resolve("kinds.json");
      Files.writeString(
          file,
          JSON.writerWithDefaultPrettyPrinter().writeValueAsString(catalogue),
          StandardCharsets.UTF_8);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(
          "could not write the demo's kinds under " + dataDir + ": " + e.getMessage(), e);
    }
  }
}
