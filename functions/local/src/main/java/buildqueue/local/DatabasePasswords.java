package buildqueue.local;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Properties;
import java.util.Set;

/**
 * The embedded PostgreSQL's passwords, one per role, made at random the first time and kept in
 * {@code <data dir>/database-passwords.properties} with mode 600: readable by the OS user that runs
 * the server and by no one else. The server uses the superuser's; a worker process is given the
 * worker role's only (V005), in its environment.
 */
record DatabasePasswords(String superuser, String worker) {
  static final String FILE = "database-passwords.properties";
  static final String SUPERUSER = "postgres";
  static final String WORKER = buildqueue.db.WorkerRole.NAME;
  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rw-------");
  private static final SecureRandom RANDOM = new SecureRandom();

  static Path file(Path dataDir) {
    return dataDir.resolve(FILE);
  }

  static boolean exist(Path dataDir) {
    return Files.exists(file(dataDir));
  }

  /** Reads the file, or makes new passwords and writes it (mode 600 from its creation on). */
  static DatabasePasswords loadOrCreate(Path dataDir) {
    Path file = file(dataDir);
    try {
      if (Files.exists(file)) {
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
          p.load(in);
        }
        // An older file, or one someone loosened: only the owner may read it.
        Files.setPosixFilePermissions(file, OWNER_ONLY);
        return new DatabasePasswords(required(p, SUPERUSER, file), required(p, WORKER, file));
      }
      DatabasePasswords made = new DatabasePasswords(random(), random());
      Properties p = new Properties();
      p.setProperty(SUPERUSER, made.superuser());
      p.setProperty(WORKER, made.worker());
      Files.createDirectories(dataDir);
      Path tmp =
          Files.createTempFile(
              dataDir, FILE, ".tmp", PosixFilePermissions.asFileAttribute(OWNER_ONLY));
      try (Writer out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
        p.store(
            out,
            "buildqueue: PostgreSQL passwords of the embedded database. Keep this file private.");
      }
      Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      return made;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read or write " + file, e);
    }
  }

  /** A file holding only the superuser's password, mode 600, for {@code initdb --pwfile}. */
  Path superuserPasswordFile(Path dir) throws IOException {
    Path tmp =
        Files.createTempFile(
            dir, "pwfile", ".tmp", PosixFilePermissions.asFileAttribute(OWNER_ONLY));
    Files.writeString(tmp, superuser + "\n", StandardCharsets.UTF_8);
    return tmp;
  }

  private static String required(Properties p, String key, Path file) {
    String value = p.getProperty(key);
    if (value == null || value.isBlank()) {
      throw new IllegalStateException(
          file + " has no password for " + key + "; remove the file only with the database");
    }
    return value;
  }

  private static String random() {
    byte[] bytes = new byte[24];
    RANDOM.nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }

  @Override
  public String toString() {
    return "DatabasePasswords[…]";
  }
}
