package buildqueue.aws.template;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The AWS API operations the production code calls, read from its compiled classes: every method
 * reference to an SDK service client ({@code software/amazon/awssdk/services/<svc>/<Svc>Client}),
 * turned into the IAM action it needs. Found from the code itself, so a new call that the template
 * does not allow fails the template test instead of a deploy.
 */
final class SdkCalls {
  private static final Map<String, String> IAM_PREFIX =
      Map.of("ecs", "ecs", "eventbridge", "events", "rdsdata", "rds-data");

  /**
   * Operations whose IAM action is named otherwise (S3 API Reference, each operation's
   * "Permissions"; Lambda's, Invoke): a listing needs s3:ListBucket, a multi-object delete
   * s3:DeleteObject per key, an Invoke lambda:InvokeFunction.
   */
  private static final Map<String, String> ACTION_OF =
      Map.of(
          "s3:ListObjectsV2",
          "s3:ListBucket",
          "s3:DeleteObjects",
          "s3:DeleteObject",
          "lambda:Invoke",
          "lambda:InvokeFunction");

  /**
   * A presigned request is made with the presigner's credentials when the URL is used: presigning a
   * GET needs s3:GetObject though no client call is made.
   */
  private static final Map<String, String> PRESIGNS =
      Map.of(
          "software/amazon/awssdk/services/s3/presigner/S3Presigner.presignGetObject",
          "s3:GetObject");

  private static final Set<String> NOT_OPERATIONS =
      Set.of(
          "builder",
          "create",
          "close",
          "serviceName",
          "serviceClientConfiguration",
          "utilities",
          "waiter");

  private SdkCalls() {}

  /** IAM action (e.g. {@code ecs:RunTask}) to the classes that call it. */
  static Map<String, Set<String>> in(Path classesDir) {
    Map<String, Set<String>> actions = new TreeMap<>();
    try (Stream<Path> files = Files.walk(classesDir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
        String className =
            classesDir.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
        try (InputStream in = Files.newInputStream(f)) {
          for (String ref : clientMethodRefs(in)) {
            actions.computeIfAbsent(ref, k -> new TreeSet<>()).add(className);
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return actions;
  }

  /** Reads a class file's constant pool for method references to SDK clients. */
  private static Set<String> clientMethodRefs(InputStream raw) throws IOException {
    DataInputStream in = new DataInputStream(raw);
    in.readInt(); // magic
    in.readUnsignedShort();
    in.readUnsignedShort();
    int count = in.readUnsignedShort();
    String[] utf8 = new String[count];
    int[] classNameIndex = new int[count];
    int[][] memberRef = new int[count][];
    int[][] nameAndType = new int[count][];
    for (int i = 1; i < count; i++) {
      int tag = in.readUnsignedByte();
      switch (tag) {
        case 1 -> utf8[i] = in.readUTF();
        case 7 -> classNameIndex[i] = in.readUnsignedShort();
        case 9, 10, 11 ->
            memberRef[i] = new int[] {tag, in.readUnsignedShort(), in.readUnsignedShort()};
        case 12 -> nameAndType[i] = new int[] {in.readUnsignedShort(), in.readUnsignedShort()};
        case 3, 4 -> in.readInt();
        case 5, 6 -> {
          in.readLong();
          i++;
        }
        case 8, 16, 19, 20 -> in.readUnsignedShort();
        case 15 -> {
          in.readUnsignedByte();
          in.readUnsignedShort();
        }
        case 17, 18 -> in.readInt();
        default -> throw new IOException("unknown constant pool tag " + tag);
      }
    }
    Set<String> refs = new TreeSet<>();
    for (int i = 1; i < count; i++) {
      if (memberRef[i] == null || memberRef[i][0] == 9) {
        continue;
      }
      String owner = utf8[classNameIndex[memberRef[i][1]]];
      String method = utf8[nameAndType[memberRef[i][2]][0]];
      String[] parts = owner.split("/");
      if (PRESIGNS.containsKey(owner + "." + method)) {
        refs.add(PRESIGNS.get(owner + "." + method));
      } else if (parts.length == 6
          && owner.startsWith("software/amazon/awssdk/services/")
          && parts[5].endsWith("Client")
          && !NOT_OPERATIONS.contains(method)) {
        String operation =
            IAM_PREFIX.getOrDefault(parts[4], parts[4])
                + ":"
                + method.substring(0, 1).toUpperCase(Locale.ROOT)
                + method.substring(1);
        refs.add(ACTION_OF.getOrDefault(operation, operation));
      }
    }
    return refs;
  }
}
