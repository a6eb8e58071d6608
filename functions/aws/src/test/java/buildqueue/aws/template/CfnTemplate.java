package buildqueue.aws.template;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.AbstractConstruct;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * A CloudFormation/SAM template read as plain maps and lists. Short-form tags become their long
 * form ({@code !Ref X} is {@code {Ref: X}}, {@code !GetAtt A.B} is {@code {Fn::GetAtt: [A, B]}},
 * {@code !Sub s} is {@code {Fn::Sub: s}}, ...), and {@link #resolve} evaluates values the way a
 * deploy would, with stand-ins for what only a deploy knows (resource ids, ARNs).
 */
final class CfnTemplate {
  private final Map<String, Object> root;

  private CfnTemplate(Map<String, Object> root) {
    this.root = root;
  }

  static CfnTemplate load(Path path) {
    Yaml yaml = new Yaml(new CfnConstructor(new LoaderOptions()));
    try (Reader r = Files.newBufferedReader(path)) {
      return new CfnTemplate(map(yaml.load(r)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  Map<String, Object> root() {
    return root;
  }

  Map<String, Object> resources() {
    return map(root.get("Resources"));
  }

  Map<String, Object> resource(String logicalId) {
    Object r = resources().get(logicalId);
    if (r == null) {
      throw new AssertionError("template has no resource " + logicalId);
    }
    return map(r);
  }

  Map<String, Object> properties(String logicalId) {
    return map(resource(logicalId).get("Properties"));
  }

  /** Logical ids of the resources of a type, in template order. */
  List<String> resourcesOfType(String type) {
    List<String> ids = new ArrayList<>();
    resources().forEach((id, r) -> {
      if (type.equals(map(r).get("Type"))) {
        ids.add(id);
      }
    });
    return ids;
  }

  Map<String, Object> globalFunction() {
    Object globals = root.get("Globals");
    return globals == null ? Map.of() : map(map(globals).getOrDefault("Function", Map.of()));
  }

  boolean isParameter(String name) {
    return root.get("Parameters") instanceof Map<?, ?> p && p.containsKey(name);
  }

  /**
   * The value a deploy would give: parameters take their defaults ({@code parameterWithoutDefault}
   * answers the others), attributes and resource references come from {@code stand_in}.
   */
  Object resolve(Object value, BiFunction<String, String, String> standIn, java.util.function.Function<String, Object> parameterWithoutDefault) {
    if (value instanceof Map<?, ?> m && m.size() == 1) {
      Map.Entry<?, ?> e = m.entrySet().iterator().next();
      String fn = String.valueOf(e.getKey());
      Object arg = e.getValue();
      switch (fn) {
        case "Ref": {
          String name = String.valueOf(arg);
          if (isParameter(name)) {
            Map<String, Object> p = map(map(root.get("Parameters")).get(name));
            return p.containsKey("Default") ? String.valueOf(p.get("Default")) : parameterWithoutDefault.apply(name);
          }
          if (name.startsWith("AWS::")) {
            return standIn.apply(name, null);
          }
          return standIn.apply(name.split("\\.")[0], name.contains(".") ? "Ref." + name.split("\\.", 2)[1] : "Ref");
        }
        case "Fn::GetAtt": {
          List<Object> parts = list(arg);
          return standIn.apply(String.valueOf(parts.get(0)), String.valueOf(parts.get(1)));
        }
        case "Fn::Join": {
          List<Object> parts = list(arg);
          Object items = resolve(parts.get(1), standIn, parameterWithoutDefault);
          List<String> strings = new ArrayList<>();
          for (Object item : items instanceof List<?> l ? l : List.of(items)) {
            Object r = resolve(item, standIn, parameterWithoutDefault);
            if (r instanceof List<?> inner) {
              inner.forEach(x -> strings.add(String.valueOf(x)));
            } else {
              strings.add(String.valueOf(r));
            }
          }
          return String.join(String.valueOf(parts.get(0)), strings);
        }
        case "Fn::Sub": {
          Matcher matcher = Pattern.compile("\\$\\{([^}]+)}").matcher(String.valueOf(arg));
          StringBuilder out = new StringBuilder();
          while (matcher.find()) {
            String ref = matcher.group(1);
            Object r = ref.contains(".") && !ref.startsWith("AWS::")
                ? standIn.apply(ref.split("\\.")[0], ref.split("\\.", 2)[1])
                : resolve(Map.of("Ref", ref), standIn, parameterWithoutDefault);
            matcher.appendReplacement(out, Matcher.quoteReplacement(String.valueOf(r)));
          }
          matcher.appendTail(out);
          return out.toString();
        }
        default:
          break;
      }
    }
    if (value instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, v) -> out.put(String.valueOf(k), resolve(v, standIn, parameterWithoutDefault)));
      return out;
    }
    if (value instanceof List<?> l) {
      List<Object> out = new ArrayList<>();
      l.forEach(v -> out.add(resolve(v, standIn, parameterWithoutDefault)));
      return out;
    }
    return value == null ? null : String.valueOf(value);
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object o) {
    if (!(o instanceof Map)) {
      throw new AssertionError("expected a mapping, got " + o);
    }
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  static List<Object> list(Object o) {
    if (o instanceof List) {
      return (List<Object>) o;
    }
    return o == null ? List.of() : List.of(o);
  }

  /** SnakeYAML's safe constructor plus CloudFormation's {@code !Tag} short forms. */
  private static final class CfnConstructor extends SafeConstructor {
    CfnConstructor(LoaderOptions options) {
      super(options);
      this.yamlMultiConstructors.put("!", new AbstractConstruct() {
        @Override
        public Object construct(Node node) {
          String tag = node.getTag().getValue().substring(1);
          Object value;
          if (node instanceof ScalarNode s) {
            value = s.getValue();
          } else if (node instanceof SequenceNode q) {
            value = constructSequence(q);
          } else {
            value = constructMapping((MappingNode) node);
          }
          if (tag.equals("Ref")) {
            return Map.of("Ref", value);
          }
          if (tag.equals("GetAtt") && value instanceof String dotted) {
            value = List.of(dotted.split("\\.", 2));
          }
          return Map.of("Fn::" + tag, value);
        }
      });
    }
  }
}
