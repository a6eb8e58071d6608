package buildqueue.aws.template;

import static buildqueue.aws.template.CfnTemplate.list;
import static buildqueue.aws.template.CfnTemplate.map;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.testing.SampleEvents;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * template.yaml passes the tools AWS publishes: cfn-lint finds no error or warning and AWS's SAM
 * translator translates it ({@code scripts/check-template.py}); and the template itself refuses a
 * Fargate CPU/memory pair that Fargate would refuse, before anything is created.
 */
class TemplateToolsTest {
  @TempDir Path dir;

  @Test
  void the_template_passes_cfn_lint_and_the_sam_translator_without_a_finding() {
    SamTranslation.Result r =
        SamTranslation.check(SampleEvents.repoFile("template.yaml"), Map.of());

    assertThat(r.findings()).as(r.output()).isEmpty();
    assertThat(r.exitStatus()).as(r.output()).isZero();
    assertThat(r.translatedJson())
        .as("the translated template")
        .contains("\"AWS::Lambda::Version\"")
        .doesNotContain("AWS::Serverless::");
  }

  @Test
  void what_cfn_lint_or_the_translator_refuses_is_a_finding() throws IOException {
    // Lambda's limit is 900 s (cfn-lint); an event type SAM does not know (the translator).
    SamTranslation.Result lint = checkEdited("      Timeout: 300\n", "      Timeout: 3000\n");
    SamTranslation.Result translate =
        checkEdited("          Type: Schedule\n", "          Type: Sometimes\n");

    assertThat(lint.exitStatus()).as(lint.output()).isEqualTo(1);
    assertThat(lint.findings())
        .as(lint.output())
        .anySatisfy(f -> assertThat(f).contains("E3034").contains("3000"));
    assertThat(translate.exitStatus()).as(translate.output()).isEqualTo(1);
    assertThat(translate.findings())
        .as(translate.output())
        .anySatisfy(
            f -> assertThat(f).startsWith("finding: SAM translator:").contains("Sometimes"));
    assertThat(translate.translatedJson()).isNull();
  }

  private SamTranslation.Result checkEdited(String from, String to) throws IOException {
    String text = Files.readString(SampleEvents.repoFile("template.yaml"));
    assertThat(text).contains(from);
    Path template = dir.resolve("template.yaml");
    Files.writeString(template, text.replace(from, to));
    return SamTranslation.check(template, Map.of());
  }

  @Test
  void the_template_refuses_a_cpu_and_memory_pair_fargate_does_not_run() {
    CfnTemplate t = CfnTemplate.load(SampleEvents.repoFile("template.yaml"));
    List<String> cpus = strings(map(t.parameters().get("WorkerCpu")).get("AllowedValues"));
    List<String> memories = strings(map(t.parameters().get("WorkerMemory")).get("AllowedValues"));

    assertThat(refusal(t, "1024", "2048")).isEmpty();
    assertThat(refusal(t, "256", "4096"))
        .hasValueSatisfying(m -> assertThat(m).contains("WorkerCpu 256"));
    assertThat(refusal(t, "16384", "8192")).isPresent();
    Map<String, Boolean> accepted = new TreeMap<>();
    for (String cpu : cpus) {
      for (String memory : memories) {
        boolean fargateRunsIt = fargatePair(Integer.parseInt(cpu), Integer.parseInt(memory));
        assertThat(refusal(t, cpu, memory).isEmpty())
            .as("cpu %s memory %s", cpu, memory)
            .isEqualTo(fargateRunsIt);
        accepted.put(cpu + "/" + memory, fargateRunsIt);
      }
    }
    assertThat(accepted).containsEntry("1024/2048", true).containsValue(false);
    assertThat(cpus).contains(String.valueOf(map(t.parameters().get("WorkerCpu")).get("Default")));
  }

  /**
   * Fargate's task sizes on Linux (ECS Developer Guide, "Task CPU and memory"): memory in MiB for
   * each CPU value, written as ranges here so that the template's lists are checked against an
   * independent statement of them.
   */
  private static boolean fargatePair(int cpu, int memory) {
    return switch (cpu) {
      case 256 -> memory == 512 || memory == 1024 || memory == 2048;
      case 512 -> memory >= 1024 && memory <= 4096 && memory % 1024 == 0;
      case 1024 -> memory >= 2048 && memory <= 8192 && memory % 1024 == 0;
      case 2048 -> memory >= 4096 && memory <= 16384 && memory % 1024 == 0;
      case 4096 -> memory >= 8192 && memory <= 30720 && memory % 1024 == 0;
      case 8192 -> memory >= 16384 && memory <= 61440 && memory % 4096 == 0;
      case 16384 -> memory >= 32768 && memory <= 122880 && memory % 8192 == 0;
      default -> false;
    };
  }

  /**
   * What CloudFormation answers for these values before it creates anything: the AssertDescription
   * of the first rule whose condition holds and an assertion fails, or nothing.
   */
  private static Optional<String> refusal(CfnTemplate t, String cpu, String memory) {
    CfnTemplate withValues = t.withParameters(Map.of("WorkerCpu", cpu, "WorkerMemory", memory));
    for (Object rule : map(withValues.root().get("Rules")).values()) {
      Map<String, Object> r = map(rule);
      if (r.containsKey("RuleCondition") && !truth(withValues, r.get("RuleCondition"))) {
        continue;
      }
      for (Object a : list(r.get("Assertions"))) {
        if (!truth(withValues, map(a).get("Assert"))) {
          return Optional.of(String.valueOf(map(a).get("AssertDescription")));
        }
      }
    }
    return Optional.empty();
  }

  /** The rule functions the template uses: Fn::Equals, Fn::Contains, Fn::And, Fn::Or, Fn::Not. */
  private static boolean truth(CfnTemplate t, Object condition) {
    Map.Entry<String, Object> fn = map(condition).entrySet().iterator().next();
    List<Object> args = list(fn.getValue());
    return switch (fn.getKey()) {
      case "Fn::Equals" -> value(t, args.get(0)).equals(value(t, args.get(1)));
      case "Fn::Contains" -> strings(args.get(0)).contains(value(t, args.get(1)));
      case "Fn::And" -> args.stream().allMatch(a -> truth(t, a));
      case "Fn::Or" -> args.stream().anyMatch(a -> truth(t, a));
      case "Fn::Not" -> !truth(t, args.get(0));
      default -> throw new AssertionError("rule function not modelled here: " + fn.getKey());
    };
  }

  private static String value(CfnTemplate t, Object v) {
    return String.valueOf(
        t.resolve(
            v,
            (r, a) -> {
              throw new AssertionError("a rule may only refer to parameters, not " + r);
            },
            p -> {
              throw new AssertionError("no value for " + p);
            }));
  }

  private static List<String> strings(Object values) {
    List<String> out = new ArrayList<>();
    list(values).forEach(v -> out.add(String.valueOf(v)));
    return out;
  }
}
