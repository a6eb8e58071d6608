package buildqueue.aws.image;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The platform the worker image must be built for: the task definition's {@code RuntimePlatform} in
 * {@code template.yaml} (Fargate pulls the image manifest for that operating system and CPU
 * architecture, and a task whose image has none fails to start), and the {@code --platform} every
 * documented {@code docker build} command passes. Read as text, so the check needs no YAML library.
 */
final class ImagePlatform {
  private ImagePlatform() {}

  private static final Map<String, String> OS = Map.of("LINUX", "linux");
  private static final Map<String, String> ARCH = Map.of("X86_64", "amd64", "ARM64", "arm64");
  private static final Pattern KEY =
      Pattern.compile(
          "^(\\s*)(?:-\\s+)?([A-Za-z]+)\\s*:\\s*[\"']?([^\"'#\\s]*)[\"']?\\s*(?:#.*)?$");
  private static final Pattern PLATFORM = Pattern.compile("--platform(?:=|\\s+)(\\S+)");

  /** A RuntimePlatform block of the template, and the Docker platform it means. */
  record RuntimePlatform(int line, String operatingSystemFamily, String cpuArchitecture) {
    /** The Docker platform ({@code linux/amd64}), or null if Docker has no Linux name for it. */
    String dockerPlatform() {
      String os = OS.get(operatingSystemFamily);
      String arch = ARCH.get(cpuArchitecture);
      return os == null || arch == null ? null : os + "/" + arch;
    }
  }

  /** A {@code docker build} command found in a document, and the platform it passes, if any. */
  record BuildCommand(int line, String text, String platform) {}

  /** Every {@code RuntimePlatform:} block of a CloudFormation/SAM template in YAML. */
  static List<RuntimePlatform> runtimePlatforms(String template) {
    List<RuntimePlatform> out = new ArrayList<>();
    String[] lines = template.split("\r?\n", -1);
    for (int i = 0; i < lines.length; i++) {
      Matcher m = KEY.matcher(lines[i]);
      if (!m.matches() || !m.group(2).equals("RuntimePlatform")) {
        continue;
      }
      int indent = m.group(1).length();
      String os = "";
      String arch = "";
      for (int j = i + 1; j < lines.length; j++) {
        if (lines[j].isBlank() || lines[j].strip().startsWith("#")) {
          continue;
        }
        Matcher k = KEY.matcher(lines[j]);
        if (!k.matches() || k.group(1).length() <= indent) {
          break;
        }
        switch (k.group(2)) {
          case "OperatingSystemFamily" -> os = k.group(3);
          case "CpuArchitecture" -> arch = k.group(3);
          default -> {}
        }
      }
      out.add(
          new RuntimePlatform(i + 1, os.toUpperCase(Locale.ROOT), arch.toUpperCase(Locale.ROOT)));
    }
    return out;
  }

  /**
   * The {@code docker build} (and {@code docker buildx build}) commands of a Markdown document's
   * fenced code blocks, continuation lines joined.
   */
  static List<BuildCommand> markdownBuildCommands(String markdown) {
    List<BuildCommand> out = new ArrayList<>();
    boolean inCode = false;
    String[] lines = markdown.split("\r?\n", -1);
    for (int i = 0; i < lines.length; i++) {
      if (lines[i].strip().startsWith("```")) {
        inCode = !inCode;
        continue;
      }
      if (inCode) {
        i = collect(lines, i, "", out);
      }
    }
    return out;
  }

  /** The {@code docker build} commands in a Dockerfile's comment lines. */
  static List<BuildCommand> commentBuildCommands(String dockerfile) {
    List<BuildCommand> out = new ArrayList<>();
    String[] lines = dockerfile.split("\r?\n", -1);
    for (int i = 0; i < lines.length; i++) {
      if (lines[i].strip().startsWith("#")) {
        i = collect(lines, i, "#", out);
      }
    }
    return out;
  }

  private static final Pattern BUILD = Pattern.compile("\\bdocker\\s+(?:buildx\\s+)?build\\b");

  private static int collect(String[] lines, int i, String prefix, List<BuildCommand> out) {
    String first = unprefix(lines[i], prefix);
    if (!BUILD.matcher(first).find()) {
      return i;
    }
    StringBuilder command = new StringBuilder();
    int start = i;
    String line = first;
    while (line.endsWith("\\") && i + 1 < lines.length) {
      command.append(line, 0, line.length() - 1).append(' ');
      line = unprefix(lines[++i], prefix);
    }
    command.append(line);
    String text = command.toString().replaceAll("\\s+", " ").strip();
    Matcher p = PLATFORM.matcher(text);
    out.add(
        new BuildCommand(start + 1, text, p.find() ? p.group(1).replaceAll("[\"']", "") : null));
    return i;
  }

  private static String unprefix(String line, String prefix) {
    String s = line.strip();
    if (!prefix.isEmpty() && s.startsWith(prefix)) {
      s = s.substring(prefix.length()).strip();
    }
    return s;
  }
}
