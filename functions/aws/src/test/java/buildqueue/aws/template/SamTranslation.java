package buildqueue.aws.template;

import buildqueue.aws.testing.SampleEvents;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The template as CloudFormation reads it: {@code scripts/check-template.py} lints it with cfn-lint
 * and translates it with AWS's SAM translator, and the tests read the translated CloudFormation.
 * One translation per template text and parameter values per JVM run. Without python3 or the tools
 * the tests that need them are skipped with the install command, and fail where {@code CI=true}.
 */
final class SamTranslation {
  static final String INSTALL = "pip install cfn-lint==1.51.0 aws-sam-translator==1.110.0";
  private static final Map<String, Result> CACHE = new ConcurrentHashMap<>();

  /** What the script said: its exit status, its output, and the translation it wrote, if any. */
  record Result(int exitStatus, String output, String translatedJson) {
    List<String> findings() {
      return output.lines().filter(l -> l.startsWith("finding:")).toList();
    }
  }

  private SamTranslation() {}

  /** The repository's template.yaml, translated with its parameters' defaults. */
  static CfnTemplate repositoryTemplate() {
    return translated(SampleEvents.repoFile("template.yaml"), Map.of());
  }

  /** A clean translation of {@code template}; a finding fails the calling test. */
  static CfnTemplate translated(Path template, Map<String, String> params) {
    Result r = check(template, params);
    if (r.exitStatus() != 0 || r.translatedJson() == null) {
      throw new AssertionError(
          "scripts/check-template.py "
              + template
              + " exited "
              + r.exitStatus()
              + ":\n"
              + r.output());
    }
    return CfnTemplate.parse(r.translatedJson());
  }

  /**
   * Runs the script (once per template text and parameters); skips or fails when the tools are
   * missing.
   */
  static Result check(Path template, Map<String, String> params) {
    String text;
    try {
      text = Files.readString(template);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String key =
        template.toAbsolutePath()
            + "\n"
            + new TreeMap<>(params)
            + "\n"
            + text.hashCode()
            + "\n"
            + text;
    Result r = CACHE.computeIfAbsent(key, k -> run(template, params));
    if (r.exitStatus() == 2 || r.exitStatus() == 127) {
      toolsMissing(r.output());
    }
    return r;
  }

  private static void toolsMissing(String output) {
    String message =
        "cfn-lint and AWS's SAM translator are needed to check template.yaml (pyenv's Python 3.11 has"
            + " them on the CI machine; elsewhere: "
            + INSTALL
            + "). The script said: "
            + output.strip();
    if ("true".equals(System.getenv("CI"))) {
      throw new AssertionError(message);
    }
    Assumptions.abort(message);
  }

  private static Result run(Path template, Map<String, String> params) {
    try {
      Path out = Files.createTempFile("translated-", ".json");
      try {
        List<String> command =
            new ArrayList<>(
                List.of(
                    "python3",
                    SampleEvents.repoFile("scripts/check-template.py").toString(),
                    template.toString(),
                    "--out",
                    out.toString()));
        new TreeMap<>(params).forEach((k, v) -> command.add("--param=" + k + "=" + v));
        Process p;
        try {
          p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
          return new Result(127, "python3 cannot be started: " + e.getMessage(), null);
        }
        p.getOutputStream().close();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new AssertionError("scripts/check-template.py did not finish in 120 s: " + output);
        }
        String json = Files.size(out) > 0 ? Files.readString(out) : null;
        return new Result(p.exitValue(), output, json);
      } finally {
        Files.deleteIfExists(out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while checking the template", e);
    }
  }
}
