package buildqueue.api;

/**
 * What the API takes as a user id or a key (idempotency, supersede): 1 to {@link
 * HttpApi#MAX_KEY_CHARS} characters, no control characters, storable as PostgreSQL text.
 */
final class Ids {
  private Ids() {}

  static boolean usable(String id) {
    if (id == null
        || id.isEmpty()
        || id.codePointCount(0, id.length()) > HttpApi.MAX_KEY_CHARS
        || hasControl(id)) {
      return false;
    }
    try {
      JsonBodies.requireStorableText(id, "id");
      return true;
    } catch (ApiProblem p) {
      return false;
    }
  }

  static boolean hasControl(String s) {
    return s.codePoints().anyMatch(Character::isISOControl);
  }
}
