package buildqueue.db;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a release's code can depend on in the {@code public} schema, read from PostgreSQL's catalog:
 * relations (tables, views, sequences, indexes), columns with their types (typmods included),
 * nullability and defaults, constraints, functions with their identity signatures, results and
 * security, types (enum labels, domain bases), and every privilege granted on them (the worker
 * role's, PUBLIC's, the owner's). {@link #narrowingsTo} says what a later level lost.
 */
record SchemaCatalog(
    Map<String, String> relations,
    Map<String, Column> columns,
    Map<String, Constraint> constraints,
    Map<String, Function> functions,
    Map<String, String> types,
    Set<String> grants) {

  record Column(String table, String type, boolean notNull, boolean hasDefault) {}

  record Constraint(String table, String type, String definition, Set<String> columns) {}

  record Function(String result, String kind, boolean securityDefiner) {}

  private static final String RELATIONS =
      """
      select c.relname, c.relkind::text as kind,
             case when c.relkind in ('i', 'I') then pg_get_indexdef(c.oid) else '' end as definition
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S', 'i', 'I')""";

  private static final String COLUMNS =
      """
      select c.relname, a.attname, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull, a.atthasdef
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'f')""";

  private static final String CONSTRAINTS =
      """
      select c.relname, k.conname, k.contype::text as type, pg_get_constraintdef(k.oid) as definition,
             (select string_agg(a.attname, ',' order by a.attname) from pg_attribute a
              where a.attrelid = k.conrelid and a.attnum = any (k.conkey)) as columns
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public'""";

  private static final String FUNCTIONS =
      """
      select p.oid::regprocedure::text as signature, coalesce(pg_get_function_result(p.oid), '') as result,
             p.prokind::text as kind, p.prosecdef
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'public'""";

  private static final String TYPES =
      """
      select t.typname, t.typtype::text as kind,
             case t.typtype
               when 'e' then (select string_agg(e.enumlabel, ',' order by e.enumsortorder) from pg_enum e
                              where e.enumtypid = t.oid)
               when 'd' then format_type(t.typbasetype, t.typtypmod) || case when t.typnotnull then ' not null' else '' end
               else '' end as definition
      from pg_type t join pg_namespace n on n.oid = t.typnamespace
      where n.nspname = 'public' and t.typtype in ('e', 'd', 'c', 'r')
        and (t.typrelid = 0 or (select c.relkind from pg_class c where c.oid = t.typrelid) = 'c')""";

  /** Explicit or default privileges (a NULL ACL means the default one), grantee 0 being PUBLIC. */
  private static final String GRANTS =
      """
      with acl as (
        select 'relation ' || c.relname as object,
               aclexplode(coalesce(c.relacl, acldefault((case when c.relkind = 'S' then 's' else 'r' end)::"char", c.relowner))) as x
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')
        union all
        select 'function ' || p.oid::regprocedure::text, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner)))
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'public'
        union all
        select 'type ' || t.typname, aclexplode(coalesce(t.typacl, acldefault('T', t.typowner)))
        from pg_type t join pg_namespace n on n.oid = t.typnamespace
        where n.nspname = 'public' and t.typtype in ('e', 'd', 'c', 'r') and t.typrelid = 0
        union all
        select 'schema ' || n.nspname, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner)))
        from pg_namespace n
        where n.nspname = 'public'
      )
      select acl.object, coalesce(r.rolname, 'PUBLIC') as grantee, (acl.x).privilege_type as privilege
      from acl left join pg_roles r on r.oid = (acl.x).grantee""";

  static SchemaCatalog read(Database db) {
    Map<String, String> relations = new TreeMap<>();
    for (Row r : db.query(RELATIONS)) {
      relations.put(r.string("relname"), r.string("kind") + " " + r.string("definition"));
    }
    Map<String, Column> columns = new TreeMap<>();
    for (Row r : db.query(COLUMNS)) {
      columns.put(
          r.string("relname") + "." + r.string("attname"),
          new Column(
              r.string("relname"), r.string("type"), r.bool("attnotnull"), r.bool("atthasdef")));
    }
    Map<String, Constraint> constraints = new TreeMap<>();
    for (Row r : db.query(CONSTRAINTS)) {
      String cols = r.string("columns");
      constraints.put(
          r.string("relname") + "." + r.string("conname"),
          new Constraint(
              r.string("relname"),
              r.string("type"),
              r.string("definition"),
              cols == null ? Set.of() : Set.of(cols.split(","))));
    }
    Map<String, Function> functions = new TreeMap<>();
    for (Row r : db.query(FUNCTIONS)) {
      functions.put(
          r.string("signature"),
          new Function(r.string("result"), r.string("kind"), r.bool("prosecdef")));
    }
    Map<String, String> types = new TreeMap<>();
    for (Row r : db.query(TYPES)) {
      types.put(r.string("typname"), r.string("kind") + " " + r.string("definition"));
    }
    Set<String> grants = new java.util.TreeSet<>();
    for (Row r : db.query(GRANTS)) {
      grants.add(
          r.string("privilege") + " on " + r.string("object") + " to " + r.string("grantee"));
    }
    return new SchemaCatalog(relations, columns, constraints, functions, types, grants);
  }

  /**
   * What {@code next} lost or narrowed of this catalog, each a sentence naming the object: a
   * release that worked on this level could fail on {@code next}. An empty list: {@code next} only
   * adds.
   */
  List<String> narrowingsTo(SchemaCatalog next) {
    List<String> out = new ArrayList<>();
    relations.forEach(
        (name, was) -> {
          String now = next.relations.get(name);
          if (now == null) {
            out.add("relation " + name + " disappeared");
          } else if (!now.equals(was)) {
            out.add("relation " + name + " changed from \"" + was + "\" to \"" + now + "\"");
          }
        });
    columns.forEach(
        (name, was) -> {
          Column now = next.columns.get(name);
          if (now == null) {
            if (next.relations.containsKey(was.table())) {
              out.add("column " + name + " disappeared");
            }
            return;
          }
          if (!widens(was.type(), now.type())) {
            out.add("column " + name + " changed type from " + was.type() + " to " + now.type());
          }
          if (!was.notNull() && now.notNull()) {
            out.add("column " + name + " became not null");
          }
          if (was.notNull() && was.hasDefault() && !now.hasDefault()) {
            out.add("column " + name + " (not null) lost its default");
          }
        });
    next.columns.forEach(
        (name, now) -> {
          boolean newColumnOfAnOldTable =
              !columns.containsKey(name)
                  && relations.containsKey(now.table())
                  && relations.get(now.table()).startsWith("r");
          if (newColumnOfAnOldTable && now.notNull() && !now.hasDefault()) {
            out.add(
                "column "
                    + name
                    + " was added not null without a default: older releases' inserts fail");
          }
        });
    constraints.forEach(
        (name, was) -> {
          Constraint now = next.constraints.get(name);
          if (now == null) {
            if (next.relations.containsKey(was.table())) {
              out.add("constraint " + name + " (" + was.definition() + ") disappeared");
            }
          } else if (!now.definition().equals(was.definition())) {
            out.add(
                "constraint "
                    + name
                    + " changed from \""
                    + was.definition()
                    + "\" to \""
                    + now.definition()
                    + "\"");
          }
        });
    next.constraints.forEach(
        (name, now) -> {
          if (constraints.containsKey(name) || !relations.containsKey(now.table())) {
            return;
          }
          List<String> oldColumns =
              now.columns().stream()
                  .filter(c -> columns.containsKey(now.table() + "." + c))
                  .sorted()
                  .toList();
          if (!oldColumns.isEmpty()) {
            out.add(
                "constraint "
                    + name
                    + " ("
                    + now.definition()
                    + ") was added on existing column(s) "
                    + oldColumns);
          }
        });
    functions.forEach(
        (signature, was) -> {
          Function now = next.functions.get(signature);
          if (now == null) {
            out.add("function " + signature + " disappeared");
            return;
          }
          if (!now.result().equals(was.result())) {
            out.add(
                "function "
                    + signature
                    + " changed its result from "
                    + was.result()
                    + " to "
                    + now.result());
          }
          if (!now.kind().equals(was.kind())) {
            out.add(
                "function "
                    + signature
                    + " changed its kind from "
                    + was.kind()
                    + " to "
                    + now.kind());
          }
          if (was.securityDefiner() && !now.securityDefiner()) {
            out.add("function " + signature + " no longer runs as its owner (security definer)");
          }
        });
    types.forEach(
        (name, was) -> {
          String now = next.types.get(name);
          if (now == null) {
            out.add("type " + name + " disappeared");
          } else if (!now.equals(was)
              && !(was.startsWith("e ")
                  && now.startsWith("e ")
                  && Set.of(now.substring(2).split(","))
                      .containsAll(Set.of(was.substring(2).split(","))))) {
            out.add("type " + name + " changed from \"" + was + "\" to \"" + now + "\"");
          }
        });
    for (String grant : grants) {
      String object = grant.substring(grant.indexOf(" on ") + 4, grant.lastIndexOf(" to "));
      if (!next.grants.contains(grant) && stillThere(next, object)) {
        out.add("privilege " + grant + " was revoked");
      }
    }
    return out;
  }

  /**
   * Whether an object named as in {@link #GRANTS} still exists (if not, its loss is reported
   * already).
   */
  private static boolean stillThere(SchemaCatalog next, String object) {
    String name = object.substring(object.indexOf(' ') + 1);
    return switch (object.substring(0, object.indexOf(' '))) {
      case "relation" -> next.relations.containsKey(name);
      case "function" -> next.functions.containsKey(name);
      case "type" -> next.types.containsKey(name);
      default -> true;
    };
  }

  private static final Pattern VARCHAR = Pattern.compile("character varying(?:\\((\\d+)\\))?");
  private static final Pattern NUMERIC = Pattern.compile("numeric(?:\\((\\d+),(\\d+)\\))?");
  private static final List<String> INTEGERS = List.of("smallint", "integer", "bigint");

  /**
   * Whether every value of type {@code from} is a value of {@code to}, so that what an older
   * release writes or reads still fits: the same type, a wider integer, a longer or unbounded
   * varchar or text, a numeric with no fewer digits either side of the point.
   */
  static boolean widens(String from, String to) {
    if (from.equals(to)) {
      return true;
    }
    if (INTEGERS.contains(from)) {
      return INTEGERS.contains(to)
          ? INTEGERS.indexOf(to) >= INTEGERS.indexOf(from)
          : to.equals("numeric");
    }
    if (from.equals("real")) {
      return to.equals("double precision");
    }
    Matcher v = VARCHAR.matcher(from);
    if (v.matches()) {
      if (to.equals("text")) {
        return true;
      }
      Matcher w = VARCHAR.matcher(to);
      return w.matches()
          && (w.group(1) == null
              || (v.group(1) != null
                  && Integer.parseInt(w.group(1)) >= Integer.parseInt(v.group(1))));
    }
    Matcher n = NUMERIC.matcher(from);
    Matcher m = NUMERIC.matcher(to);
    if (n.matches() && m.matches()) {
      if (m.group(1) == null) {
        return true;
      }
      if (n.group(1) == null) {
        return false;
      }
      int p1 = Integer.parseInt(n.group(1));
      int s1 = Integer.parseInt(n.group(2));
      int p2 = Integer.parseInt(m.group(1));
      int s2 = Integer.parseInt(m.group(2));
      return s2 >= s1 && p2 - s2 >= p1 - s1;
    }
    return false;
  }
}
