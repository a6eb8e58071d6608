package buildqueue.faults;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.DirectoryArtifactStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The scenario's artifact store, as its workers and its ticks' sweep use it: the production {@link
 * DirectoryArtifactStore} (what the local runtime gives its workers) in the scenario's folder,
 * watched. It remembers which worker uploaded what and has not yet come to its end (the moment a
 * worker may be killed or paused between its uploads and its end), and which attempts' uploads a
 * worker removed itself in the current step (an end that was refused); the invariants read what it
 * holds ({@link #contents}). Nothing here draws or waits: a put or a removal is part of the step of
 * the worker (or tick) that makes it.
 */
final class SimArtifactStore implements ArtifactStore {
  private static final Pattern ATTEMPT = Pattern.compile("attempt-(\\d+)-worker-(\\d+)");

  private final DirectoryArtifactStore directory;
  private final Scheduler scheduler;

  /** The attempt each worker uploaded and whose end has not come yet. */
  private final Map<Long, AttemptKey> uploadedNotEnded = new HashMap<>();

  /** Attempts whose uploads their own worker removed since the last {@link #removedInStep}. */
  private final List<AttemptKey> removedByWorkers = new ArrayList<>();

  SimArtifactStore(Path root, Scheduler scheduler) {
    this.directory = new DirectoryArtifactStore(root);
    this.scheduler = scheduler;
  }

  Path root() {
    return directory.root();
  }

  @Override
  public StoredArtifact put(AttemptKey attempt, String name, Path file) throws IOException {
    Scheduler.Actor a = scheduler.current();
    if (a != null && a.worker) {
      synchronized (this) {
        uploadedNotEnded.put(a.workerId, attempt);
      }
    }
    return directory.put(attempt, name, file);
  }

  @Override
  public void removeAttempt(AttemptKey attempt) throws IOException {
    Scheduler.Actor a = scheduler.current();
    if (a != null && a.worker) {
      synchronized (this) {
        removedByWorkers.add(attempt);
      }
    }
    directory.removeAttempt(attempt);
  }

  @Override
  public Download download(AttemptKey attempt, String name, Duration validFor) throws IOException {
    return directory.download(attempt, name, validFor);
  }

  /** Whether no attempt has a file here (the local runtime's tick sweeps only otherwise). */
  boolean isEmpty() {
    try {
      return directory.isEmpty();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The attempt {@code workerId} uploaded and has not yet come to the end of, now that it comes to
   * it; null if it uploaded nothing for this job.
   */
  synchronized AttemptKey uploadedNowEnding(long workerId) {
    return uploadedNotEnded.remove(workerId);
  }

  /** The attempts whose uploads their own worker removed since the last call. */
  synchronized List<AttemptKey> removedInStep() {
    List<AttemptKey> out = List.copyOf(removedByWorkers);
    removedByWorkers.clear();
    return out;
  }

  /** Every attempt's files in the store: attempt → name → contents. */
  Map<AttemptKey, Map<String, byte[]>> contents() {
    Map<AttemptKey, Map<String, byte[]>> out = new HashMap<>();
    Path jobs = directory.root().resolve("jobs");
    if (!Files.isDirectory(jobs)) {
      return out;
    }
    try (var files = Files.walk(jobs)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        Path rel = jobs.relativize(f);
        Matcher m = ATTEMPT.matcher(rel.getNameCount() < 3 ? "" : rel.getName(1).toString());
        if (!m.matches()) {
          throw new IllegalStateException("a file outside any attempt's place in the store: " + f);
        }
        AttemptKey key =
            new AttemptKey(
                Long.parseLong(rel.getName(0).toString()),
                Integer.parseInt(m.group(1)),
                Long.parseLong(m.group(2)));
        String name = rel.subpath(2, rel.getNameCount()).toString().replace('\\', '/');
        out.computeIfAbsent(key, k -> new TreeMap<>()).put(name, Files.readAllBytes(f));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}
