package buildqueue.aws.template;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiFunction;
import java.util.function.Function;
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
 * A CloudFormation/SAM template read as plain maps and lists (the tests read the translated
 * CloudFormation, {@link SamTranslation}). Short-form tags become their long form ({@code !Ref X}
 * is {@code {Ref: X}}, {@code !GetAtt A.B} is {@code {Fn::GetAtt: [A, B]}}, {@code !Sub s} is
 * {@code {Fn::Sub: s}}, ...), and {@link #resolve} evaluates values the way a deploy would, with
 * stand-ins for what only a deploy knows (resource ids, ARNs).
 */
final class CfnTemplate {
  private final Map<String, Object> root;

  private CfnTemplate(Map<String, Object> root) {
    this.root = root;
  }

  static CfnTemplate load(Path path) {
    try (Reader r = Files.newBufferedReader(path)) {
      return new CfnTemplate(map(new Yaml(new CfnConstructor(new LoaderOptions())).load(r)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A template's text, YAML or JSON. */
  static CfnTemplate parse(String text) {
    return new CfnTemplate(map(new Yaml(new CfnConstructor(new LoaderOptions())).load(text)));
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
    resources()
        .forEach(
            (id, r) -> {
              if (type.equals(map(r).get("Type"))) {
                ids.add(id);
              }
            });
    return ids;
  }

  /**
   * This template with {@code values} as its parameters' defaults (what a deploy with them
   * resolves).
   */
  CfnTemplate withParameters(Map<String, String> values) {
    Map<String, Object> copy = new LinkedHashMap<>(root);
    Map<String, Object> params = new LinkedHashMap<>();
    parameters()
        .forEach(
            (name, p) -> {
              Map<String, Object> declared = new LinkedHashMap<>(map(p));
              if (values.containsKey(name)) {
                declared.put("Default", values.get(name));
              }
              params.put(name, declared);
            });
    values
        .keySet()
        .forEach(
            name -> {
              if (!params.containsKey(name)) {
                throw new AssertionError("the template has no parameter " + name);
              }
            });
    copy.put("Parameters", params);
    return new CfnTemplate(copy);
  }

  Map<String, Object> parameters() {
    return root.get("Parameters") == null ? Map.of() : map(root.get("Parameters"));
  }

  boolean isParameter(String name) {
    return parameters().containsKey(name);
  }

  /**
   * The resources {@code logicalId} waits for on a deploy: its DependsOn and every resource its
   * properties refer to (Ref, Fn::GetAtt, ${...} in Fn::Sub), and theirs, transitively.
   */
  Set<String> dependencies(String logicalId) {
    Set<String> seen = new TreeSet<>();
    ArrayDeque<String> todo = new ArrayDeque<>(List.of(logicalId));
    while (!todo.isEmpty()) {
      Map<String, Object> r = resource(todo.pop());
      Set<String> direct = new TreeSet<>();
      list(r.get("DependsOn")).forEach(d -> direct.add(String.valueOf(d)));
      references(r.get("Properties"), direct);
      for (String d : direct) {
        if (resources().containsKey(d) && seen.add(d)) {
          todo.add(d);
        }
      }
    }
    return seen;
  }

  private static void references(Object value, Set<String> into) {
    if (value instanceof Map<?, ?> m) {
      m.forEach(
          (k, v) -> {
            if (k.equals("Ref")) {
              into.add(String.valueOf(v).split("\\.")[0]);
            } else if (k.equals("Fn::GetAtt")) {
              into.add(String.valueOf(list(v).get(0)));
            } else if (k.equals("Fn::Sub")) {
              Matcher refs =
                  Pattern.compile("\\$\\{([^}!]+)}").matcher(String.valueOf(list(v).get(0)));
              while (refs.find()) {
                into.add(refs.group(1).split("\\.")[0]);
              }
            }
            references(v, into);
          });
    } else if (value instanceof List<?> l) {
      l.forEach(v -> references(v, into));
    }
  }

  /**
   * The value a deploy would give: parameters take their defaults ({@code parameterWithoutDefault}
   * answers the others), attributes and resource references come from {@code stand_in}.
   */
  Object resolve(
      Object value,
      BiFunction<String, String, String> standIn,
      Function<String, Object> parameterWithoutDefault) {
    if (value instanceof Map<?, ?> m && m.size() == 1) {
      Map.Entry<?, ?> e = m.entrySet().iterator().next();
      String fn = String.valueOf(e.getKey());
      Object arg = e.getValue();
      switch (fn) {
        case "Ref":
          {
            String name = String.valueOf(arg);
            if (isParameter(name)) {
              Map<String, Object> p = map(map(root.get("Parameters")).get(name));
              return p.containsKey("Default")
                  ? String.valueOf(p.get("Default"))
                  : parameterWithoutDefault.apply(name);
            }
            if (name.startsWith("AWS::")) {
              return standIn.apply(name, null);
            }
            return standIn.apply(
                name.split("\\.")[0],
                name.contains(".") ? "Ref." + name.split("\\.", 2)[1] : "Ref");
          }
        case "Fn::GetAtt":
          {
            List<Object> parts = list(arg);
            return standIn.apply(String.valueOf(parts.get(0)), String.valueOf(parts.get(1)));
          }
        case "Fn::Join":
          {
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
        case "Fn::Sub":
          {
            List<Object> form = list(arg);
            Map<String, Object> variables = form.size() > 1 ? map(form.get(1)) : Map.of();
            Matcher matcher =
                Pattern.compile("\\$\\{([^}]+)}").matcher(String.valueOf(form.get(0)));
            StringBuilder out = new StringBuilder();
            while (matcher.find()) {
              String ref = matcher.group(1);
              Object r =
                  variables.containsKey(ref)
                      ? resolve(variables.get(ref), standIn, parameterWithoutDefault)
                      : ref.contains(".") && !ref.startsWith("AWS::")
                          ? standIn.apply(ref.split("\\.")[0], ref.split("\\.", 2)[1])
                          : resolve(Map.of("Ref", ref), standIn, parameterWithoutDefault);
              matcher.appendReplacement(out, Matcher.quoteReplacement(String.valueOf(r)));
            }
            matcher.appendTail(out);
            return out.toString();
          }
        case "Fn::Select":
          {
            List<Object> parts = list(arg);
            Object items = resolve(parts.get(1), standIn, parameterWithoutDefault);
            List<Object> values =
                items instanceof List<?> l
                    ? new ArrayList<>(l)
                    : new ArrayList<>(List.of(String.valueOf(items).split(",", -1)));
            return values.get(
                Integer.parseInt(
                    String.valueOf(resolve(parts.get(0), standIn, parameterWithoutDefault))));
          }
        case "Fn::Split":
          {
            List<Object> parts = list(arg);
            String text = String.valueOf(resolve(parts.get(1), standIn, parameterWithoutDefault));
            return new ArrayList<Object>(
                List.of(text.split(Pattern.quote(String.valueOf(parts.get(0))), -1)));
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
      this.yamlMultiConstructors.put(
          "!",
          new AbstractConstruct() {
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
