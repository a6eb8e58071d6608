package buildqueue.aws.testing;

import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The real-shaped sample events in {@code infra/events/}, as bytes, as JSON trees a test can adjust
 * (a task ARN, a token), or as the aws-lambda-java-events object the Lambda Java runtime would make
 * of them (through the runtime's own serializer).
 */
public final class SampleEvents {
  private static final ObjectMapper JSON = new ObjectMapper();

  private SampleEvents() {}

  /** A file of the repository, found from the module directory the tests run in. */
  public static Path repoFile(String relative) {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null) {
      Path candidate = dir.resolve(relative);
      if (Files.exists(candidate) && Files.isDirectory(dir.resolve("functions"))) {
        return candidate;
      }
      dir = dir.getParent();
    }
    throw new IllegalStateException("no " + relative + " above " + Path.of("").toAbsolutePath());
  }

  public static byte[] bytes(String name) {
    try {
      return Files.readAllBytes(repoFile("infra/events/" + name));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static ObjectNode tree(String name) {
    try {
      return (ObjectNode) JSON.readTree(bytes(name));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static byte[] bytes(ObjectNode tree) {
    try {
      return JSON.writeValueAsBytes(tree);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The event as the Lambda runtime would deserialize it for a handler taking {@code type}. */
  public static <T> T asLambdaEvent(byte[] json, Class<T> type) {
    return LambdaEventSerializers.serializerFor(type, SampleEvents.class.getClassLoader())
        .fromJson(new ByteArrayInputStream(json));
  }
}
