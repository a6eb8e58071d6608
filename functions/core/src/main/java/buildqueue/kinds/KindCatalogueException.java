package buildqueue.kinds;

import buildqueue.BuildQueueException;

/**
 * The kind catalogue cannot be used: unreadable, not strict JSON, an unknown key or a bad value.
 * The message names the file, the kind and the key, and says what is accepted; nothing starts with
 * a catalogue that refused to load.
 */
public class KindCatalogueException extends BuildQueueException {
  public KindCatalogueException(String message) {
    super(message);
  }

  public KindCatalogueException(String message, Throwable cause) {
    super(message, cause);
  }
}
